/**
 * The line a boot ends with (a failure, a stop while starting), in the format of every other line: for a
 * collector (LOG_FORMAT=json, or auto off a terminal) one JSON object as the logger writes a fatal line (or an
 * info one: what the migrate role did); on a terminal the sentence itself. LOG_FORMAT is read as given, a value
 * it does not take as auto: the failure may be that very value, and a collector must still read it.
 */
export function bootLine(service: string, message: string, level: 'info' | 'fatal' = 'fatal'): string {
  const format = process.env.LOG_FORMAT;
  const text = format === 'pretty' || (format !== 'json' && process.stdout.isTTY === true);
  return text ? message : JSON.stringify({ level: level === 'info' ? 30 : 60, time: new Date().toISOString(), service, msg: message });
}

/** A problem with how the process was configured: boot stops with this one message, no stack. */
export class BootError extends Error {}

interface ListenError {
  code?: string;
  port?: number;
  address?: string;
  /** The variable that sets this port, when the listener said (a probe server beside the app's own: see listenProbes). */
  portVariable?: string;
}

/**
 * What a main prints when boot fails: one line saying what, why and what to do. A BootError is its
 * own message; a port that cannot be opened names the port and the variable that sets it (the one the error
 * carries, else `portVariable`, the app's own listener's); anything else is one line, with the stack only
 * when LOG_LEVEL is debug or trace.
 */
export function describeBootFailure(app: string, error: unknown, defaultPortVariable = 'PORT'): string {
  if (error instanceof BootError) {
    return error.message;
  }
  const { code, port, address, portVariable = defaultPortVariable } = (error ?? {}) as ListenError;
  const where = port === undefined ? '' : address ? ` ${port} on ${address}` : ` ${port}`;
  if (code === 'EADDRINUSE') {
    return `The ${app} cannot start: port${where} is already in use by another process. Stop that process, or set ${portVariable} to a free port.`;
  }
  if (code === 'EACCES') {
    return `The ${app} cannot start: port${where} needs privileges this user lacks. Set ${portVariable} to a port above 1023.`;
  }
  if (code === 'EADDRNOTAVAIL') {
    return `The ${app} cannot start: ${address ?? 'the HOST address'} is not an address of this machine. Set HOST to one of its addresses (127.0.0.1 for this machine only).`;
  }
  const database = databaseConnectionProblem(error);
  if (database) {
    return `The ${app} cannot start: ${database}`;
  }
  const message = error instanceof Error ? error.message : String(error);
  const debug = ['debug', 'trace'].includes(process.env.LOG_LEVEL ?? '');
  if (debug && error instanceof Error && error.stack) {
    return `The ${app} failed to start: ${message}\n${error.stack}`;
  }
  return `The ${app} failed to start: ${message} (LOG_LEVEL=debug shows the stack)`;
}

/** Failures to open a connection (not to listen): the database is where a starting process connects to. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET']);

/**
 * Where DATABASE_URL points, without its credentials: `host:port/database`. A password holding an unencoded `/`,
 * `?` or `#` ends the URL's authority early, so that the rest of it would read as the path: such an address is
 * described, never shown.
 */
function databaseLocation(): string {
  const raw = process.env.DATABASE_URL ?? '';
  try {
    const url = new URL(raw);
    if (raw.includes('@') && (!url.username || `${url.pathname}${url.search}${url.hash}`.includes('@'))) {
      return 'an address whose user and password do not parse: percent-encode / ? # @ in the password';
    }
    return `${url.hostname}:${url.port || 5432}${url.pathname}`;
  } catch {
    return 'an address that is not a URL';
  }
}

/**
 * A database DATABASE_URL names that cannot be reached or refuses the login (SQLSTATE class 28) or has no such
 * database (3D000), said as such: the driver's own words ("connect ECONNREFUSED 127.0.0.1:1", "password
 * authentication failed") do not say which setting to fix. Null for any other error.
 */
export function databaseConnectionProblem(error: unknown): string | null {
  const { code, syscall } = (error ?? {}) as { code?: unknown; syscall?: unknown };
  if (typeof code !== 'string') {
    return null;
  }
  const refused = /^28[0-9A-Z]{3}$/.test(code) || code === '3D000';
  // ENOENT only from connect: a Unix socket (`?host=/run/postgresql`) that is not there, not a file boot could not read.
  const unreachable = (UNREACHABLE.has(code) && syscall !== 'listen') || (code === 'ENOENT' && syscall === 'connect');
  if (!refused && !unreachable) {
    return null;
  }
  const message = error instanceof Error ? error.message : String(error);
  return `the database DATABASE_URL names (${databaseLocation()}) ${refused ? 'refused the connection' : 'cannot be reached'}: ${message}. Check DATABASE_URL (host, port, user, password, database) and that PostgreSQL runs there.`;
}

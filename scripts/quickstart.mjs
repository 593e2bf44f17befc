// `npm start`: the whole service on one machine. Starts an embedded PostgreSQL
// (data kept in .data/) unless DATABASE_URL is set, applies migrations, then runs
// the api and the worker as child processes. Ctrl-C, SIGTERM or closing the terminal stops everything:
// api and worker first, PostgreSQL last.
//
// Before anything else it checks what would stop a start half-way (a taken port, a data directory
// held by a PostgreSQL still running) and says so in one line. It claims readiness only once the
// api's /readyz and the worker's /readyz answer 200, then records the api URL as SERVICE_URL in
// ./.env (the working directory: the checkout root under `npm start`), where `svc` looks.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build as buildCheckout, isStale } from './build.cjs';
import { freePort, startEmbeddedPostgres } from './embedded-postgres.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CHILD_PRELOAD = join(root, 'scripts/quickstart-child.cjs');
const dataDir = resolve(process.env.PLATFORM_DATA_DIR ?? join(root, '.data'));
// .data/ is traversable (0711) so the unprivileged postgres user can reach its cluster;
// the key file and the database password file are owner-only.
const keyFile = join(dataDir, 'os-security-key');
// The key as an HTTP header line, for `curl -H @file`: a command that expands the key puts it in curl's argv,
// which any user of the machine can read while it runs.
const headerFile = join(dataDir, 'admin-header');
const databaseDir = join(dataDir, 'postgres');
const databasePasswordFile = join(dataDir, 'postgres-password');
const host = process.env.HOST ?? '127.0.0.1';
const debug = ['debug', 'trace'].includes(process.env.LOG_LEVEL ?? '');
/** How long api and worker get to answer /readyz (a first boot on two busy cores has taken over 30 s). */
const READY_TIMEOUT_MS = Number(process.env.QUICKSTART_READY_TIMEOUT_MS ?? 180_000);

/** A start that cannot go on: its message is the one line the user sees. */
class QuickstartError extends Error {}

function say(message) {
  process.stdout.write(`[quickstart] ${message}\n`);
}

function complain(message) {
  process.stderr.write(`[quickstart] ${message}\n`);
}

/** A path as the user would type it from here: relative inside the working directory. */
function shown(path) {
  const fromHere = relative(process.cwd(), path);
  return fromHere && !fromHere.startsWith('..') ? fromHere : path;
}

/** `path` as one shell word: as is when plain, else single-quoted. */
function shellWord(path) {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

function ensureDataDir() {
  mkdirSync(dataDir, { recursive: true });
  chmodSync(dataDir, 0o711);
}

// ---------------------------------------------------------------------------------------------
// Checks before the start

/** A process's command line from /proc, or null when it cannot be read. */
function commandLine(pid) {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return command ? (command.length > 160 ? `${command.slice(0, 157)}...` : command) : null;
  } catch {
    return null;
  }
}

/** A data directory for a second copy: the first `.data-N` of this checkout that does not exist yet. */
function spareDataDir() {
  for (let n = 2; ; n += 1) {
    if (!existsSync(join(root, `.data-${n}`))) {
      return `.data-${n}`;
    }
  }
}

/** Best effort (Linux /proc): the parent of process `pid`, or null. */
function parentOf(pid) {
  try {
    const parent = /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return parent ? Number(parent[1]) : null;
  } catch {
    return null;
  }
}

/** The start command again with `assignments`, keeping a PLATFORM_DATA_DIR this start was given (a new one in `assignments` wins). */
function startCommand(assignments) {
  const given = process.env.PLATFORM_DATA_DIR;
  const dataDir = given && !assignments.includes('PLATFORM_DATA_DIR=') ? ` PLATFORM_DATA_DIR=${shellWord(given)}` : '';
  return `${assignments}${dataDir} npm start`;
}

/** Whether a process (as listenerOf names it) runs this checkout's service, its api or its worker. */
function ofThisCheckout(holder) {
  return holder?.command?.includes(join(root, 'dist', 'apps')) === true;
}

/** Best effort (Linux /proc): the process listening on TCP `port`, or null. */
function listenerOf(port) {
  const inodes = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.trim().split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is hex ADDRESS:PORT; state 0A is LISTEN; field 9 is the socket's inode.
      if (fields[3] === '0A' && parseInt(fields[1].split(':').pop(), 16) === port) {
        inodes.add(fields[9]);
      }
    }
  }
  if (inodes.size === 0) {
    return null;
  }
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let fds;
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (socket && inodes.has(socket[1])) {
          return { pid: Number(pid), command: commandLine(pid) };
        }
      } catch {
        // The descriptor closed meanwhile.
      }
    }
  }
  return null;
}

/** null when `port` can be opened on `address`, else the error code (EADDRINUSE, EACCES, ...). */
function cannotListen(port, address) {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', (error) => done(error.code ?? String(error)));
    server.listen({ port, host: address, exclusive: true }, () => server.close(() => done(null)));
  });
}

async function nextFreePort(after, address) {
  for (let port = after + 1; port < Math.min(after + 50, 65536); port += 1) {
    if ((await cannotListen(port, address)) === null) {
      return port;
    }
  }
  return after + 1;
}

function portNumber(variable, value) {
  const port = Number(value);
  if (!/^\d+$/.test(String(value)) || port < 1 || port > 65535) {
    throw new QuickstartError(
      `${variable}=${JSON.stringify(value)} is not a port: use a whole number from 1 to 65535, e.g. ${variable}=7778 npm start`,
    );
  }
  return port;
}

/** Every fixed port the start would open, checked before anything is printed or started. */
async function checkPorts(ports) {
  for (const { variable, port, address } of ports) {
    const problem = await cannotListen(port, address);
    if (problem === null) {
      continue;
    }
    if (problem === 'EADDRINUSE') {
      const holder = listenerOf(port);
      if (ofThisCheckout(holder)) {
        throw new QuickstartError(
          `This checkout's service is already running (pid ${holder.pid} holds port ${port}): use it, or stop it with Ctrl-C in its npm start. A second copy needs its own port and data: ${startCommand(`${variable}=${await nextFreePort(port, address)} PLATFORM_DATA_DIR=${spareDataDir()}`)}`,
        );
      }
      const by = holder ? `by pid ${holder.pid}${holder.command ? `: ${holder.command}` : ''}` : 'by another process';
      throw new QuickstartError(
        `Port ${port} is already in use (${by}). Start on another port: ${startCommand(`${variable}=${await nextFreePort(port, address)}`)}`,
      );
    }
    if (problem === 'EACCES') {
      throw new QuickstartError(`Port ${port} needs privileges this user lacks. Start on a port above 1023: ${variable}=7777 npm start`);
    }
    if (problem === 'EADDRNOTAVAIL' || problem === 'ENOTFOUND') {
      throw new QuickstartError(`HOST=${address} is not an address of this machine. Start on this machine only: HOST=127.0.0.1 npm start`);
    }
    throw new QuickstartError(`Cannot open port ${port} on ${address} (${problem}).`);
  }
}

/**
 * A PostgreSQL still running on the data directory (after a crash, or another `npm start`) would make
 * ours stop at once. A postmaster.pid whose process is gone is no obstacle: PostgreSQL replaces it.
 * Stopping it is the fix only when no npm start serves with it: one that does is left running, and this
 * start is told how to run a copy of its own beside it.
 */
async function checkClusterFree(port) {
  const pidFile = join(databaseDir, 'postmaster.pid');
  let pid;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0) {
    return;
  }
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (error.code === 'ESRCH') {
      return;
    }
  }
  const command = commandLine(pid);
  if (command && !/postgres/.test(command)) {
    throw new QuickstartError(
      `${shown(pidFile)} names pid ${pid}, now another process (${command}), so PostgreSQL will not start. No PostgreSQL holds ${shown(databaseDir)}: remove ${shown(pidFile)}, then run npm start again.`,
    );
  }
  const starter = parentOf(pid);
  if (starter !== null && commandLine(starter)?.includes(join('scripts', 'quickstart.mjs'))) {
    throw new QuickstartError(
      `${shown(dataDir)} holds the data of an npm start still running (pid ${starter}; its PostgreSQL is pid ${pid}). Leave it running: a second copy needs its own data (this port is free): ${startCommand(`PORT=${port} PLATFORM_DATA_DIR=${spareDataDir()}`)}. Or stop that one first (Ctrl-C in its npm start), then run npm start again.`,
    );
  }
  // Where the system does not say who started it (no /proc), it may still be another npm start's.
  const leftBy =
    starter === null
      ? `left running by an earlier start or used by another npm start. Stop it (Ctrl-C in that npm start, or: kill -INT ${pid})`
      : `left running by an earlier start. Stop it (kill -INT ${pid})`;
  throw new QuickstartError(
    `${shown(databaseDir)} is in use by PostgreSQL pid ${pid} (${command ?? 'its command line is not readable'}), ${leftBy} or wait for it to exit, then run npm start again.`,
  );
}

// ---------------------------------------------------------------------------------------------
// The pieces

/** Generated once, kept owner-only in .data/, reused on every later start. */
function securityKey() {
  if (process.env.OS_SECURITY_KEY) {
    return { key: process.env.OS_SECURITY_KEY, source: 'the OS_SECURITY_KEY environment variable', file: null };
  }
  ensureDataDir();
  if (!existsSync(keyFile)) {
    writeFileSync(keyFile, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
    say(`Generated an OS security key in ${keyFile} (mode 0600)`);
  }
  chmodSync(keyFile, 0o600);
  const key = readFileSync(keyFile, 'utf8').trim();
  writeFileSync(headerFile, `Authorization: Bearer ${key}\n`, { mode: 0o600 });
  chmodSync(headerFile, 0o600);
  return { key, source: keyFile, file: keyFile };
}

/** Builds only when a source file is newer than the last build, so restarts are quick. */
function build() {
  if (!isStale('dist/apps/api/src/main.js')) {
    return;
  }
  say('Building (tsc)');
  try {
    buildCheckout();
  } catch {
    throw new QuickstartError(
      'The build failed (errors above). Fix them, or run npm ci if dependencies are missing, then run npm start again.',
    );
  }
}

/** `exit code 1` or `signal SIGKILL`. */
function howItEnded({ code, signal }) {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

/** The error a log line reports, or null: pino JSON at level error or above, or a plain stderr line. */
function errorIn(line, fromStderr) {
  const text = line.trim();
  if (!text) {
    return null;
  }
  // LOG_FORMAT=pretty: `[12:00:00.000] ERROR: api <message> {fields}`.
  const pretty = /^\[[\d:.]+\] (ERROR|FATAL): (?:api |worker )?(.*?)(?: \{.*\})?$/.exec(text);
  if (pretty) {
    return pretty[2];
  }
  if (/^\[[\d:.]+\] [A-Z]+: /.test(text)) {
    return null;
  }
  if (text.startsWith('{')) {
    try {
      const entry = JSON.parse(text);
      if (typeof entry.level === 'number' && entry.level >= 50) {
        const cause = entry.err?.message ?? entry.error?.message;
        return cause && cause !== entry.msg ? `${entry.msg}: ${cause}` : String(entry.msg ?? text);
      }
      return null;
    } catch {
      // Not JSON after all.
    }
  }
  // Stack frames, object dumps and Node's trailer say nothing the message line did not.
  if (!fromStderr || /^\s/.test(line) || /^[{}[\]^]/.test(text) || /^Node\.js v\d/.test(text)) {
    return null;
  }
  return text;
}

/**
 * A child whose output passes through to ours, remembering the last error it reported, the ports it
 * listens on (`ports`, as its preload says), and an `ended` promise of how it exited.
 */
function runChild(name, script, env, { detached }) {
  // detached: a process group of its own, so a terminal's Ctrl-C reaches only the quickstart,
  // which stops the children in order. The preload stops a child the quickstart could not (killed with -9), and
  // says over the IPC channel which ports the child listens on.
  const child = spawn(process.execPath, ['--require', CHILD_PRELOAD, script], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    detached,
  });
  const running = { name, child, lastError: null, ports: new Set() };
  child.on('message', (message) => {
    if (Number.isInteger(message?.listening)) {
      running.ports.add(message.listening);
    }
  });
  for (const [stream, target, fromStderr] of [
    [child.stdout, process.stdout, false],
    [child.stderr, process.stderr, true],
  ]) {
    let pending = '';
    stream.on('data', (chunk) => {
      target.write(chunk);
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) {
        running.lastError = errorIn(line, fromStderr) ?? running.lastError;
      }
    });
  }
  running.ended = new Promise((done) => {
    child.on('error', (error) => {
      running.lastError = error.message;
      done({ code: null, signal: null });
    });
    child.on('exit', (code, signal) => done({ code, signal }));
  });
  return running;
}

/** 200 from GET url within a short timeout. */
async function answers200(url) {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

/**
 * SERVICE_URL=<url> in ./.env, where `svc` looks: added, or replaced when this script wrote it
 * (the marker line above it) and the instance it names no longer answers; a SERVICE_URL the user set,
 * or one naming another copy that still runs, is left alone. Holds no secret: a new file is 0644, an
 * existing one keeps its mode and every other line.
 */
const ENV_MARKER = '# Written by npm start (scripts/quickstart.mjs) at each start: where svc finds this instance.';

function envValue(line, key) {
  const text = line.trim().replace(/^export\s+/, '');
  const equals = text.indexOf('=');
  if (text.startsWith('#') || equals <= 0 || text.slice(0, equals).trim() !== key) {
    return undefined;
  }
  const value = text.slice(equals + 1).trim();
  return /^["']/.test(value)
    ? value.slice(1, value.indexOf(value[0], 1) > 0 ? value.indexOf(value[0], 1) : undefined)
    : value.replace(/\s+#.*$/, '');
}

async function recordServiceUrl(url) {
  const envFile = join(process.cwd(), '.env');
  const production = join(process.cwd(), '.env.production');
  if (existsSync(production)) {
    const set = readFileSync(production, 'utf8')
      .split(/\r?\n/)
      .map((line) => envValue(line, 'SERVICE_URL'))
      .filter(Boolean)
      .pop();
    if (set && set !== url) {
      say(`Note: .env.production sets SERVICE_URL=${set}, which svc reads before .env; pass --url ${url} to reach this instance.`);
    }
  }
  let lines = [];
  if (existsSync(envFile) || isSymlink(envFile)) {
    if (isSymlink(envFile)) {
      say(`Not writing SERVICE_URL to .env: it is a symbolic link. svc reaches this instance with --url ${url}`);
      return;
    }
    lines = readFileSync(envFile, 'utf8').split('\n');
    if (lines.at(-1) === '') {
      lines.pop();
    }
  }
  const index = lines.findLastIndex((line) => envValue(line, 'SERVICE_URL') !== undefined);
  if (index >= 0) {
    const current = envValue(lines[index], 'SERVICE_URL');
    if (current === url) {
      return;
    }
    if (lines[index - 1] !== ENV_MARKER) {
      say(`.env sets SERVICE_URL=${current} (not written by npm start), left as is; svc reaches this instance with --url ${url}`);
      return;
    }
    // A second copy does not take svc (and the first copy's key) away from the first while it runs; any other
    // server now on that port does not keep it (svc would send it this checkout's key), however like this service it
    // answers. Where the system does not say who listens, .env names this copy.
    if (ofThisCheckout(listenerOf(Number(URL.parse(current)?.port)))) {
      say(`.env's SERVICE_URL=${current} is another copy, still running: left as is; svc reaches this one with --url ${url}`);
      return;
    }
    lines[index] = `SERVICE_URL=${url}`;
  } else {
    lines.push(ENV_MARKER, `SERVICE_URL=${url}`);
  }
  writeFileSync(envFile, `${lines.join('\n')}\n`, { mode: 0o644 });
  say(`Wrote SERVICE_URL=${url} to ${shown(envFile)}, so svc here finds this instance`);
}

function isSymlink(path) {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------

/** What has been started, so that any failure or signal stops exactly that, in order. */
const state = { stopping: false, db: null, dbStarting: null, dbGone: false, children: [] };

/** api and worker (and migrations) first, then PostgreSQL, then exit with `code`. */
async function shutdown(code, reason) {
  if (state.stopping) {
    return;
  }
  state.stopping = true;
  if (reason) {
    complain(reason);
  }
  const running = state.children.filter(({ child }) => child.exitCode === null && child.signalCode === null);
  if (running.length > 0) {
    say(`Stopping ${running.map(({ name }) => name).join(' and ')}`);
  }
  await Promise.all(
    running.map(({ child, ended }) => {
      child.kill('SIGTERM');
      // The worker's own SIGTERM deadline is shorter than this.
      const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
      return ended.then(() => clearTimeout(timer));
    }),
  );
  const database = state.db ?? (await state.dbStarting?.catch(() => null));
  if (database) {
    if (!state.dbGone) {
      say('Stopping PostgreSQL');
    }
    await database.stop();
  }
  process.exit(code);
}

async function main() {
  // embedded-postgres (through async-exit-hook) stops PostgreSQL on SIGINT/SIGTERM/SIGHUP and exits
  // 130/143/129 by itself, racing the ordered stop below (and on SIGHUP leaving the worker to drain with
  // nobody reading its output). The quickstart owns its shutdown: drop those listeners.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.listeners(signal).forEach((listener) => process.removeListener(signal, listener));
  }
  const embedded = !process.env.DATABASE_URL;
  const port = portNumber('PORT', process.env.PORT ?? '7777');
  const fixedPorts = [{ variable: 'PORT', port, address: host }];
  if (embedded && process.env.EMBEDDED_PG_PORT) {
    fixedPorts.push({
      variable: 'EMBEDDED_PG_PORT',
      port: portNumber('EMBEDDED_PG_PORT', process.env.EMBEDDED_PG_PORT),
      address: '127.0.0.1',
    });
  }
  if (process.env.WORKER_HEALTH_PORT) {
    fixedPorts.push({
      variable: 'WORKER_HEALTH_PORT',
      port: portNumber('WORKER_HEALTH_PORT', process.env.WORKER_HEALTH_PORT),
      address: host,
    });
  }
  await checkPorts(fixedPorts);
  if (embedded) {
    await checkClusterFree(port);
  }

  // Output with nowhere to go (the terminal closed; `npm start | tee log` and Ctrl-C ended tee first) must not
  // end the quickstart before its children: it keeps reading their output, and stops them in order.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', () => undefined);
  }
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGHUP', () => void shutdown(0));
  // Whatever ends this process, no child outlives it.
  process.on('exit', () =>
    state.children.forEach(({ child }) => child.exitCode === null && child.signalCode === null && child.kill('SIGTERM')),
  );

  build();
  const { key, source, file } = securityKey();

  let databaseUrl = process.env.DATABASE_URL;
  // Ports this start has chosen: none is picked again for another of its servers before it binds.
  const chosenPorts = [port];
  if (embedded) {
    const dbPort = Number(process.env.EMBEDDED_PG_PORT ?? (await freePort(chosenPorts)));
    chosenPorts.push(dbPort);
    ensureDataDir();
    say(`Starting embedded PostgreSQL (data in ${databaseDir}, 127.0.0.1:${dbPort}, user postgres, password in ${databasePasswordFile})`);
    state.dbStarting = startEmbeddedPostgres({
      databaseDir,
      port: dbPort,
      persistent: true,
      passwordFile: databasePasswordFile,
      detached: true,
      log: (text) => debug && process.stderr.write(text),
      onExit: (ended) => {
        state.dbGone = true;
        void shutdown(
          1,
          `PostgreSQL stopped (${howItEnded(ended)})${ended.lastError ? `: ${ended.lastError}` : ''}. Stopping everything; see the lines above, then run npm start again.`,
        );
      },
    });
    try {
      state.db = await state.dbStarting;
    } catch (error) {
      throw new QuickstartError(`${error.message}. Run LOG_LEVEL=debug npm start to see PostgreSQL's own output.`);
    }
    databaseUrl = state.db.url('postgres');
  }
  if (state.stopping) {
    return;
  }

  // A port picked here can be taken by another program before the worker binds it: the worker then gets another.
  const healthPortPicked = process.env.WORKER_HEALTH_PORT === undefined;
  let workerHealthPort = process.env.WORKER_HEALTH_PORT ?? String(await freePort(chosenPorts));
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    OS_SECURITY_KEY: key,
    HOST: host,
    PORT: String(port),
    WORKER_HEALTH_PORT: workerHealthPort,
    // The children write to a pipe (read here for their last error), not the terminal: keep the
    // readable lines they would have chosen on it.
    LOG_FORMAT: process.env.LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'auto'),
    MCP_ENABLED: process.env.MCP_ENABLED ?? 'true',
    DEMO_COMPONENTS: process.env.DEMO_COMPONENTS ?? 'true',
  };
  // Only the api checks credentials. The worker calls it with its own per-schedule credentials, and
  // migrations need only the database: neither gets the root key.
  const { OS_SECURITY_KEY: _rootKey, ...withoutKey } = env;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${port}`;
  // The worker's fires call this api, named outright (a worker deployed apart is warned when it is not).
  const workerEnv = { ...withoutKey, PUBLIC_URL: withoutKey.PUBLIC_URL ?? url };

  const migrate = runChild('migrations', join(root, 'dist/libs/database/src/migrate.main.js'), withoutKey, { detached: true });
  state.children.push(migrate);
  const migrated = await migrate.ended;
  if (state.stopping) {
    return;
  }
  if (migrated.code !== 0) {
    return shutdown(
      1,
      `Migrations failed (${howItEnded(migrated)})${migrate.lastError ? `: ${migrate.lastError}` : ''}. Fix the cause, then run npm start again.`,
    );
  }

  let ready = false;
  /** Runs api or worker; its end stops everything, unless it is the worker losing the health port picked for it. */
  const start = (name, envOf, portRetries) => {
    const running = runChild(name, join(root, `dist/apps/${name}/src/main.js`), envOf, { detached: true });
    state.children.push(running);
    void running.ended.then(async (ended) => {
      if (state.stopping) {
        return;
      }
      if (!ready && portRetries > 0 && /already in use/.test(running.lastError ?? '')) {
        state.children.splice(state.children.indexOf(running), 1);
        const taken = workerHealthPort;
        workerHealthPort = String(await freePort([...chosenPorts, Number(taken)]));
        say(`Port ${taken}, picked for the worker's health probes, was taken meanwhile: starting the worker on ${workerHealthPort}`);
        start(name, { ...envOf, WORKER_HEALTH_PORT: workerHealthPort }, portRetries - 1);
        return;
      }
      const when = ready ? 'stopped' : 'failed to start';
      void shutdown(
        1,
        `The ${name} ${when} (${howItEnded(ended)})${running.lastError ? `: ${running.lastError}` : ''}. Stopping everything; fix the cause, then run npm start again (LOG_LEVEL=debug shows more).`,
      );
    });
  };
  start('api', env, 0);
  start('worker', workerEnv, healthPortPicked ? 2 : 0);

  const workerUrl = () => `http://${shownHost}:${workerHealthPort}`;
  // Readiness is asked of a port once our own child holds it: whatever answers there then is that child.
  const listens = (name, onPort) => state.children.some((child) => child.name === name && child.ports.has(Number(onPort)));
  const isReady = async () =>
    listens('api', port) &&
    listens('worker', workerHealthPort) &&
    (await answers200(`${url}/readyz`)) &&
    (await answers200(`${workerUrl()}/readyz`));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!state.stopping && !(await isReady())) {
    if (Date.now() > deadline) {
      return shutdown(
        1,
        `The api (${url}/readyz) or the worker (${workerUrl()}/readyz) did not answer 200 within ${READY_TIMEOUT_MS / 1000} s. Stopping everything; LOG_LEVEL=debug npm start shows more.`,
      );
    }
    await new Promise((done) => setTimeout(done, 250));
  }
  if (state.stopping) {
    return;
  }
  ready = true;

  await recordServiceUrl(url);
  say(`API:      ${url}`);
  say(`Docs:     ${url}/docs`);
  say(`MCP:      ${url}/mcp`);
  say(`Admin credential (OS security key): ${file ? shown(file) : source}. Use it as a bearer token, e.g.:`);
  const header = file ? `@${shellWord(shown(headerFile))}` : '"Authorization: Bearer $OS_SECURITY_KEY"';
  // No prefix and no trailing comment: the whole line pastes into a shell as it is.
  process.stdout.write(`  curl -s ${url}/config -H ${header}\n`);
  say('Press Ctrl-C to stop.');
}

main().catch((error) => {
  if (error instanceof QuickstartError) {
    complain(error.message);
  } else {
    complain(`The start failed: ${error?.message ?? String(error)}${debug ? '' : ' (LOG_LEVEL=debug shows the stack)'}`);
    if (debug && error?.stack) {
      process.stderr.write(`${error.stack}\n`);
    }
  }
  // Stops whatever had started.
  void shutdown(1);
});

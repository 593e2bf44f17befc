const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  // Refusals that pass with time: no connection slot free, a primary failed over to a standby (read-only until
  // clients reach the new primary). Not a full disk: a worker would hold the outcomes it cannot write for as long
  // as it lasts, while its claims (updates in place) still go through.
  '53300',
  '25006',
  '08000',
  '08001',
  '08003',
  '08006',
]);
const CONNECTION_MESSAGES =
  /(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down)|Cannot use a pool after calling end on the pool)/i;

/** A statement that could not be sent in time because those before it are stuck (a lock, a hung database): no connection to be had, as far as its caller can tell. */
export class DatabaseBusyError extends Error {
  override readonly name = 'DatabaseBusyError';
}

const RELEASED_CONNECTION_ERRORS = new Set(['QueryRunnerAlreadyReleasedError', 'QueryRunnerProviderAlreadyReleasedError']);

/** True when an error means "the database cannot be reached", as opposed to a bad query. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) {
    return false;
  }
  // TypeORM releases a transaction's connection when it breaks; the transaction's next statement then meets one of these.
  if (RELEASED_CONNECTION_ERRORS.has(error.name) || error instanceof DatabaseBusyError) {
    return true;
  }
  const code = (error as { code?: string }).code ?? (error as { driverError?: { code?: string } }).driverError?.code;
  return (code !== undefined && CONNECTION_ERROR_CODES.has(code)) || CONNECTION_MESSAGES.test(error.message);
}

/**
 * An undefined table or column: the database's schema does not match this build (usually its migrations not yet
 * applied, as readiness reports). Not counted as unavailable: a worker holding outcomes for it would hold them for good.
 */
export function isSchemaMismatch(error: unknown): boolean {
  const code = (error as { code?: string }).code ?? (error as { driverError?: { code?: string } }).driverError?.code;
  return code === '42P01' || code === '42703';
}

/** Postgres unique_violation: a constraint named in `constraint` was hit. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const driverError =
    (error as { driverError?: { code?: string; constraint?: string } }).driverError ?? (error as { code?: string; constraint?: string });
  return driverError?.code === '23505' && (constraint === undefined || driverError.constraint === constraint);
}

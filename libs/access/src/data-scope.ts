import { RequestErrorCode, RequestException } from '@app/errors';

import { isAdmin, Principal, SERVICE_ACCOUNT_PREFIX } from './principal';

/**
 * Self-scoping lives here and only here: which rows a caller may read and write.
 * Repositories take a DataScope as their first argument; `all` is only ever built
 * for admins, unscoped credentials, or JWT users when user isolation is off.
 */
export class DataScope {
  private constructor(readonly ownerId: string | null) {}

  static all(): DataScope {
    return new DataScope(null);
  }

  static owner(ownerId: string): DataScope {
    return new DataScope(ownerId);
  }

  static of(principal: Principal): DataScope {
    if (isAdmin(principal) || !principal.selfScoped || principal.userId === null) {
      return DataScope.all();
    }
    return DataScope.owner(principal.userId);
  }

  get isAll(): boolean {
    return this.ownerId === null;
  }

  /** May this scope see a row owned by `ownerId`? */
  includes(ownerId: string | null): boolean {
    return this.ownerId === null || this.ownerId === ownerId;
  }

  /**
   * SQL condition on `column` for a statement prepared once for every scope: the owner is parameter
   * `$<parameter>`, bound to `ownerId` (null: everyone's rows).
   */
  static preparedWhere(column: string, parameter: number): string {
    return `($${parameter}::varchar IS NULL OR ${column} = $${parameter})`;
  }

  /** SQL condition on `column`, with its parameters named uniquely for query builders. */
  where(column: string): { sql: string; params: Record<string, unknown> } {
    return this.ownerId === null
      ? { sql: 'TRUE', params: {} }
      : { sql: `${column} = :scopeOwnerId`, params: { scopeOwnerId: this.ownerId } };
  }
}

/**
 * Changing (cancelling, editing, deleting) a row the caller may see is narrower than seeing it: a JWT user sees
 * everyone's rows while user isolation is off, yet changes only its own. Admins, and callers without an identity
 * of their own (the security key; anonymous on an open instance), change any.
 */
export function mayChange(principal: Principal, ownerId: string | null): boolean {
  return isAdmin(principal) || principal.userId === null || principal.userId === ownerId;
}

/** Refuses (403) a change `mayChange` does not allow; `what` names the row, `action` the change ("Run '…'", "cancel"). */
export function assertMayChange(principal: Principal, ownerId: string | null, what: string, action: string): void {
  if (mayChange(principal, ownerId)) {
    return;
  }
  throw new RequestException(
    RequestErrorCode.Forbidden,
    `${what} belongs to another principal: only its owner or an admin (platform:admin) may ${action} it`,
  );
}

/**
 * The user a new row (run, session, schedule) is attributed to. A `user_id` parameter is honoured
 * only for callers without an identity of their own (the security key; anonymous on an open
 * instance) and for JWT admins, never for a schedule's fire; everyone else's rows are their own,
 * whatever `user_id` says.
 * A service account always acts as `sa:<name>`, and only an admin may name an `sa:` principal.
 */
export function attributedUser(principal: Principal, requested?: string | null): string | null {
  // A schedule's fire acts for its owner alone: its payload was written by whoever wrote the schedule, and a
  // PATCH makes the editor the owner, so a `user_id` in it could otherwise borrow an admin editor's say.
  if (requested === undefined || requested === null || requested === principal.userId || principal.scheduleId) {
    return principal.userId;
  }
  const mayNameAnother =
    principal.kind === 'security_key' || principal.kind === 'anonymous' || (principal.kind === 'jwt' && isAdmin(principal));
  if (!mayNameAnother) {
    return principal.userId;
  }
  if (requested.startsWith(SERVICE_ACCOUNT_PREFIX) && !isAdmin(principal)) {
    throw new RequestException(
      RequestErrorCode.Forbidden,
      `Only platform:admin or the OS security key may act for a service account (user_id '${requested}')`,
    );
  }
  return requested;
}

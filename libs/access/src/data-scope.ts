import { isAdmin, Principal } from './principal';

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

  /** SQL condition on `column`, with its parameters named uniquely for query builders. */
  where(column: string): { sql: string; params: Record<string, unknown> } {
    return this.ownerId === null
      ? { sql: 'TRUE', params: {} }
      : { sql: `${column} = :scopeOwnerId`, params: { scopeOwnerId: this.ownerId } };
  }
}

/**
 * The user a new row is attributed to: the caller's own identity when it has one;
 * `requested` (a `user_id` parameter) only for callers without an identity of their own.
 */
export function attributedUser(principal: Principal, requested?: string | null): string | null {
  if (principal.kind === 'service_account') {
    return principal.userId;
  }
  if (principal.selfScoped) {
    return principal.userId;
  }
  return requested ?? principal.userId;
}

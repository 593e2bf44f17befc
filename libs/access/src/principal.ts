import { ADMIN_SCOPE, covers, isComponentGrantOf } from './scope';

/** `oauth`: an access token from the external authorization server /mcp trusts (MCP_OAUTH_*). */
export type CredentialKind = 'anonymous' | 'security_key' | 'jwt' | 'service_account' | 'oauth';

/** Who is calling, as every service method sees it. Built only by the authenticator. */
export interface Principal {
  readonly kind: CredentialKind;
  /** JWT `sub`, or `sa:<name>` for a service account; null for the security key and anonymous callers. */
  readonly userId: string | null;
  /** Held scopes; empty for unscoped credentials. */
  readonly scopes: readonly string[];
  /** False for the security key, anonymous callers on an open instance and JWTs with authorization off. */
  readonly scopesEnforced: boolean;
  /** True when reads and writes are confined to `userId` (service accounts always; JWT users under USER_ISOLATION). */
  readonly selfScoped: boolean;
  readonly serviceAccountId?: string;
  /**
   * A service account's: when the credential stops verifying, in epoch milliseconds (null: never). What it
   * mints expires no later. Absent for other kinds (a JWT's own `exp` bounds its requests, not what it mints).
   */
  readonly expiresAtMs?: number | null;
  /** Set when the caller is a schedule's fire acting for the schedule's owner. */
  readonly scheduleId?: string;
}

/**
 * Who called, for a log line: `sa:<name>`, `jwt:<sub>`, `oauth:<sub>`, `security_key` or `anonymous`, and for a
 * schedule's fire `schedule:<id>` with the owner it acts for. Never a credential.
 */
export function describePrincipal(principal: Principal): string {
  const who =
    principal.kind === 'service_account' || principal.userId === null
      ? (principal.userId ?? principal.kind)
      : `${principal.kind}:${principal.userId}`;
  return principal.scheduleId ? `schedule:${principal.scheduleId} for ${who}` : who;
}

export const SERVICE_ACCOUNT_PREFIX = 'sa:';

/** A service account's name: a lowercase slug of a-z, 0-9, '-' and '_', starting with a letter or digit, at most 63. */
export const SERVICE_ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export function serviceAccountPrincipal(name: string): string {
  return `${SERVICE_ACCOUNT_PREFIX}${name}`;
}

export function isAdmin(principal: Principal): boolean {
  return principal.kind === 'security_key' || principal.scopes.includes(ADMIN_SCOPE);
}

/**
 * Does the caller pass a route that requires `scope`? Unenforced callers pass every scope check,
 * except that an admin-only route binds every identified caller (JWT or service account) to
 * the admin scope even with JWT enforcement off; the security key and an anonymous caller on
 * an open instance pass (the admin gate of the queue routes).
 */
export function mayUse(principal: Principal, scope: string): boolean {
  if (scope === ADMIN_SCOPE && (principal.kind === 'jwt' || principal.kind === 'service_account')) {
    return principal.scopes.includes(ADMIN_SCOPE);
  }
  return !principal.scopesEnforced || covers(principal.scopes, scope);
}

/**
 * Can the caller pass a route requiring `scope` for some call? For a route that narrows its scope to the
 * component it names, a grant for any one component is enough (`agents:echo-agent:run` may run that agent).
 */
export function mayUseSome(principal: Principal, scope: string, perComponent: boolean): boolean {
  return mayUse(principal, scope) || (perComponent && principal.scopes.some((held) => isComponentGrantOf(held, scope)));
}

import { createHash, timingSafeEqual } from 'node:crypto';

import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

import { intersectScopes, mayUseSome, Principal, SERVICE_ACCOUNT_PREFIX, serviceAccountPrincipal } from '@app/access';
import { Env, warnIfShort } from '@app/config';
import { assertUnreachable } from '@app/errors';
import {
  OWNER_REFUSAL_GRACE_SECONDS,
  SCHEDULE_CREDENTIAL_PREFIX,
  SCHEDULE_KEY_TAG_HEADER,
  ScheduleCall,
  ScheduleCredentials,
  ScheduleOwner,
} from '@app/schedules';
import { ServiceAccountsService, ServiceAccountVerifier, TOKEN_PREFIX, Verification } from '@app/service-accounts';

import { AuthErrorCode, AuthException } from './auth.exception';
import { AuthMode, authMode } from './auth-mode';
import { JwtIdentity, JwtRejected, JwtVerifier, McpOAuthVerifier } from './jwt-verifier';
import { RouteScope, UnschedulableReason } from './scopes.decorator';

export interface Credentials {
  /** The raw Authorization header, if any. */
  authorization?: string;
  /** The key tag a schedule's fire sends beside its credential (SCHEDULE_KEY_TAG_HEADER), if any. */
  scheduleKeyTag?: string;
  /** The client address, which the failed-lookup limiter counts by. */
  clientKey: string;
  /** The request's method and URL: a schedule's credential is good for one call only. */
  call: ScheduleCall;
}

/** What a request presents to be identified: its Authorization header, its client address and its call. */
export function credentialsOf(request: Pick<FastifyRequest, 'headers' | 'ip' | 'method' | 'url'>): Credentials {
  const tag = request.headers[SCHEDULE_KEY_TAG_HEADER];
  return {
    authorization: request.headers.authorization,
    scheduleKeyTag: typeof tag === 'string' ? tag : undefined,
    clientKey: request.ip,
    call: { method: request.method, url: request.url },
  };
}

const ANONYMOUS: Principal = { kind: 'anonymous', userId: null, scopes: [], scopesEnforced: false, selfScoped: false };
const ROOT: Principal = { kind: 'security_key', userId: null, scopes: [], scopesEnforced: false, selfScoped: false };

// The principal of each credential kind, whether the credential is presented now or recorded as a
// schedule's owner: a schedule's fire carries the rights its owner had, never more.

function serviceAccountCaller(
  userId: string,
  scopes: string[],
  serviceAccountId: string | undefined,
  expiresAtMs: number | null,
): Principal {
  // A token's scopes are stored data, enforced in every auth mode; a service account always sees only its own data.
  return { kind: 'service_account', userId, scopes, scopesEnforced: true, selfScoped: true, serviceAccountId, expiresAtMs };
}

/** A schedule's fire: its owner's principal, marked so that schedules cannot change schedules. */
function forSchedule(owner: Principal, scheduleId: string): Principal {
  return { ...owner, scheduleId };
}

/** The authorization server's access tokens: delegated to a client app, so always scoped and self-scoped. */
function oauthCaller(userId: string, scopes: string[]): Principal {
  return { kind: 'oauth', userId, scopes, scopesEnforced: true, selfScoped: true };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** `Bearer <token>` (any case), or a bare token. */
export function bearerToken(header: string | undefined): string | null {
  const value = header?.trim();
  if (!value) {
    return null;
  }
  const match = /^bearer\s+(.+)$/i.exec(value);
  return (match ? match[1] : value).trim() || null;
}

/**
 * The one place a credential becomes a Principal and a scope is checked.
 * REST routes reach it through the ScopeGuard, MCP tool calls directly.
 */
@Injectable()
export class Authenticator {
  readonly mode: AuthMode;
  private readonly securityKey: Buffer | null;

  constructor(
    private readonly env: Env,
    private readonly serviceAccounts: ServiceAccountVerifier,
    private readonly jwt: JwtVerifier,
    private readonly mcpOAuth: McpOAuthVerifier,
    private readonly accounts: ServiceAccountsService,
    private readonly scheduleCredentials: ScheduleCredentials,
  ) {
    this.mode = authMode(env);
    this.securityKey = env.OS_SECURITY_KEY ? digest(env.OS_SECURITY_KEY) : null;
    warnIfShort('OS_SECURITY_KEY', env.OS_SECURITY_KEY, 16, 'it is a root credential, and a short one is easy to guess');
  }

  /**
   * Identifies the caller, then checks `requiredScope` (already narrowed to a component id where the route has
   * one; with `anyComponent`, a grant for one component of its resource passes too: a list the route narrows).
   */
  async authenticate(credentials: Credentials, requiredScope: string, anyComponent = false): Promise<Principal> {
    const principal = await this.identify(credentials);
    try {
      this.authorize(principal, requiredScope, anyComponent);
    } catch (error) {
      if (principal.scheduleId) {
        // The owner held this scope when the schedule was last written, and no longer does.
        await this.scheduleCredentials.disable(principal.scheduleId, `owner_lacks_scope:${requiredScope}`);
      }
      throw error;
    }
    return principal;
  }

  authorize(principal: Principal, requiredScope: string, anyComponent = false): void {
    if (!mayUseSome(principal, requiredScope, anyComponent)) {
      throw AuthException.insufficientScope(requiredScope);
    }
  }

  /** Could some call of a route with this rule pass `authorize`? What MCP's tools/list shows a caller. */
  mayCall(principal: Principal, rule: RouteScope): boolean {
    return mayUseSome(principal, rule.scope, rule.componentParam !== undefined || rule.listedPerComponent === true);
  }

  /**
   * A fire at a route no fire can use, from a schedule stored before the route said so (the create and PATCH
   * checks refuse such a call now): the schedule stops, with the reason, rather than failing at every tick.
   * Any other caller, and a credential that does not verify, pass on to the route's own checks.
   */
  async refuseUnfitFire(credentials: Credentials, unfitness: UnschedulableReason, body: unknown): Promise<void> {
    const token = bearerToken(credentials.authorization);
    const reason = token?.startsWith(SCHEDULE_CREDENTIAL_PREFIX) ? unfitness(body) : null;
    const owner = reason ? await this.scheduleCredentials.resolve(token!, credentials.call) : null;
    if (!owner) {
      return;
    }
    await this.scheduleCredentials.disable(owner.scheduleId, 'unschedulable_route');
    throw new AuthException(AuthErrorCode.Forbidden, `${reason}. The schedule is disabled (unschedulable_route).`);
  }

  async identify(credentials: Credentials): Promise<Principal> {
    const token = bearerToken(credentials.authorization);
    if (token === null) {
      return this.anonymousOr(this.missingCredentialDetail());
    }
    if (/^bearer\s/i.test(token)) {
      // `Bearer Bearer <credential>`: a credential pasted with its scheme where the credential alone goes (Swagger's Authorize).
      return this.anonymousOr('Invalid authentication token: "Bearer" appears twice; give the credential alone after it');
    }
    if (token.startsWith(SCHEDULE_CREDENTIAL_PREFIX)) {
      return this.fromSchedule(token, credentials.scheduleKeyTag, await this.scheduleCredentials.resolve(token, credentials.call));
    }
    if (token.startsWith(TOKEN_PREFIX)) {
      return this.fromServiceAccount(await this.serviceAccounts.verify(token, credentials.clientKey));
    }
    if (this.isSecurityKey(token)) {
      return ROOT;
    }
    if (this.jwt.configured) {
      return this.fromJwt(token);
    }
    return this.anonymousOr('Invalid authentication token');
  }

  /**
   * The caller of /mcp: REST's credentials, plus, when /mcp is an OAuth-protected resource, access
   * tokens from its authorization server. An OAuth-protected /mcp refuses anonymous callers in every
   * mode, so clients get the challenge that starts their sign-in.
   */
  async identifyForMcp(credentials: Credentials): Promise<Principal> {
    if (!this.mcpOAuth.configured) {
      return this.identify(credentials);
    }
    try {
      return await this.identifyAtOAuthResource(credentials);
    } catch (error) {
      if (error instanceof AuthException && error.code === AuthErrorCode.Unauthenticated) {
        // RFC 9728 §5.1: the challenge names the resource metadata, which names the authorization server.
        const invalid = bearerToken(credentials.authorization) === null ? '' : 'error="invalid_token", ';
        throw new AuthException(error.code, error.detail, `Bearer ${invalid}resource_metadata="${this.env.mcpResourceMetadataUrl}"`);
      }
      throw error;
    }
  }

  private async identifyAtOAuthResource(credentials: Credentials): Promise<Principal> {
    const token = bearerToken(credentials.authorization);
    if (token === null) {
      throw new AuthException(AuthErrorCode.Unauthenticated, 'Authorization header missing');
    }
    if (!token.startsWith(TOKEN_PREFIX) && !this.isSecurityKey(token)) {
      const identity = await this.mcpOAuth.verify(token).catch((error: unknown) => this.rejectedOr(error));
      if (identity) {
        return this.fromOAuth(identity);
      }
      if (!this.jwt.configured) {
        throw new AuthException(AuthErrorCode.Unauthenticated, 'Invalid authentication token');
      }
    }
    const principal = await this.identify(credentials);
    if (principal.kind === 'anonymous') {
      throw new AuthException(AuthErrorCode.Unauthenticated, 'Invalid authentication token');
    }
    return principal;
  }

  private missingCredentialDetail(): string {
    // Older clients infer the auth mode from this wording ("required" means security key).
    return this.mode === 'jwt' ? 'Authorization header missing' : 'Authorization header required';
  }

  /** With no auth configured, a credential that does not verify is ignored. */
  private anonymousOr(detail: string, code = AuthErrorCode.Unauthenticated): Principal {
    if (this.mode === 'none') {
      return ANONYMOUS;
    }
    throw new AuthException(code, detail);
  }

  private fromServiceAccount(verification: Verification): Principal {
    switch (verification.outcome) {
      case 'ok':
        return serviceAccountCaller(
          serviceAccountPrincipal(verification.account.name),
          verification.account.scopes,
          verification.account.id,
          verification.account.expiresAtMs,
        );
      case 'invalid':
        return this.anonymousOr('Invalid or expired service account token');
      case 'throttled':
        return this.anonymousOr('Too many failed authentication attempts', AuthErrorCode.Throttled);
      case 'unavailable':
        return this.anonymousOr('Authentication is temporarily unavailable', AuthErrorCode.Unavailable);
    }
  }

  /**
   * A schedule's fire carries its owner's rights as recorded, narrowed to what the service knows
   * the owner holds now (a service account's current scopes). A refusal is always a 401, even on an
   * open instance, where falling back to anonymous could grant more than the owner had.
   */
  private async fromSchedule(credential: string, keyTag: string | undefined, owner: ScheduleOwner | null): Promise<Principal> {
    if (!owner && (await this.scheduleCredentials.signedWithAnotherKey(credential, keyTag))) {
      throw new AuthException(
        AuthErrorCode.Unauthenticated,
        'Schedule credential signed with another key: the api and the worker hold different INTERNAL_SERVICE_TOKEN values (set the same on both, or on neither)',
      );
    }
    if (!owner) {
      // A worker of an earlier release sends no key tag: the key may still be the cause.
      throw new AuthException(
        AuthErrorCode.Unauthenticated,
        `Invalid or expired schedule credential, not issued for this call, or the schedule is disabled${keyTag === undefined ? ' (or api and worker hold different INTERNAL_SERVICE_TOKEN values)' : ''}`,
      );
    }
    const principal = await this.scheduleOwnerPrincipal(owner);
    if (principal) {
      await this.scheduleCredentials.ownerAccepted(owner);
      return principal;
    }
    // The owner could not make this call on this instance today: the fire fails, and the schedule stops, with the
    // reason, once that has lasted longer than a rolling update between settings takes.
    const reason = `owner_credential_unaccepted:${owner.kind}`;
    if (await this.scheduleCredentials.refuseOwner(owner.scheduleId, reason)) {
      throw new AuthException(
        AuthErrorCode.Unauthenticated,
        `The schedule's owner used a credential this instance no longer accepts; the schedule is disabled (${reason})`,
      );
    }
    throw new AuthException(
      AuthErrorCode.Unauthenticated,
      `The schedule's owner used a credential this instance does not accept; the schedule is disabled if that lasts ${OWNER_REFUSAL_GRACE_SECONDS / 60} minutes`,
    );
  }

  /** The principal a schedule's fire acts as, or null when this instance does not accept the owner's kind of credential. */
  private async scheduleOwnerPrincipal(owner: ScheduleOwner): Promise<Principal | null> {
    switch (owner.kind) {
      case 'service_account': {
        const standing = await this.accounts.standing(owner.serviceAccountId ?? '');
        if (standing.state !== 'active') {
          throw new AuthException(AuthErrorCode.Unauthenticated, `The schedule's service account is ${standing.state}`);
        }
        const scopes = intersectScopes(owner.scopes, standing.scopes);
        return forSchedule(
          serviceAccountCaller(owner.userId ?? '', scopes, owner.serviceAccountId ?? undefined, standing.expiresAtMs),
          owner.scheduleId,
        );
      }
      case 'jwt':
        if (this.jwt.configured) {
          return forSchedule(this.jwtCaller(owner.userId ?? '', owner.scopes), owner.scheduleId);
        }
        break;
      case 'oauth':
        if (this.mcpOAuth.configured) {
          return forSchedule(oauthCaller(owner.userId ?? '', owner.scopes), owner.scheduleId);
        }
        break;
      case 'security_key':
        // Rotating the key revokes it: a schedule the old key wrote acts no more.
        if (this.securityKey && !owner.keyRotated) {
          return forSchedule(ROOT, owner.scheduleId);
        }
        break;
      case 'anonymous':
        if (this.mode === 'none') {
          return forSchedule(ANONYMOUS, owner.scheduleId);
        }
        break;
      default:
        assertUnreachable(owner.kind);
    }
    return null;
  }

  private async fromJwt(token: string): Promise<Principal> {
    try {
      const identity = await this.jwt.verify(token);
      if (identity.sub.startsWith(SERVICE_ACCOUNT_PREFIX)) {
        // `sa:` identities come from service-account tokens only.
        throw new JwtRejected('Invalid token subject');
      }
      return this.jwtCaller(identity.sub, identity.scopes);
    } catch (error) {
      if (error instanceof JwtRejected) {
        throw new AuthException(AuthErrorCode.Unauthenticated, error.message);
      }
      throw error;
    }
  }

  /** The authorization server's access tokens: delegated to a client app, so always scoped and self-scoped. */
  private fromOAuth(identity: JwtIdentity): Principal {
    if (identity.sub.startsWith(SERVICE_ACCOUNT_PREFIX)) {
      throw new AuthException(AuthErrorCode.Unauthenticated, 'Invalid token subject');
    }
    return oauthCaller(identity.sub, identity.scopes);
  }

  private jwtCaller(userId: string, scopes: string[]): Principal {
    return { kind: 'jwt', userId, scopes, scopesEnforced: this.env.jwtScopesEnforced, selfScoped: this.env.USER_ISOLATION };
  }

  /** A token another verifier may still accept: null; anything but a rejection propagates. */
  private rejectedOr(error: unknown): null {
    if (error instanceof JwtRejected) {
      return null;
    }
    throw error;
  }

  private isSecurityKey(token: string): boolean {
    return this.securityKey !== null && timingSafeEqual(digest(token), this.securityKey);
  }
}

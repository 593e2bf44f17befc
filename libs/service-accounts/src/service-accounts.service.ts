import { randomUUID } from 'node:crypto';

import { Injectable, Logger } from '@nestjs/common';

import {
  covers,
  DataScope,
  DEFAULT_SCOPES,
  isAdmin,
  isPrivilegedScope,
  isValidScope,
  mayChange,
  Principal,
  serviceAccountPrincipal,
} from '@app/access';
import { isUniqueViolation, toEpoch } from '@app/database';
import { Page, toPage } from '@app/pagination';

import {
  CreatedServiceAccountDto,
  CreateServiceAccountDto,
  DEFAULT_EXPIRY_DAYS,
  DEFAULT_GRACE_SECONDS,
  ListServiceAccountsQuery,
  RotateServiceAccountDto,
  ServiceAccountDto,
} from './service-account.dto';
import { ServiceAccountEntity } from './service-account.entity';
import { ServiceAccountErrorCode as Code, ServiceAccountException } from './service-account.exception';
import { ACTIVE_NAME_CONSTRAINT, ServiceAccountRepository } from './service-account.repository';
import { ServiceAccountVerifier } from './service-account-verifier';
import { generateToken } from './token';

const DAY_MS = 86_400_000;

export interface AccountStanding {
  state: 'active' | 'revoked' | 'expired' | 'missing';
  principal: string | null;
  /** The account's scopes as they are now (empty when it is missing). */
  scopes: string[];
  /** When the account expires, in epoch milliseconds (null: never, or missing). */
  expiresAtMs: number | null;
}
const MINT_SCOPE = 'service_accounts:write';

/**
 * The expiry asked for (by default 90 days), but for a token minted by a token never later than the minting
 * token's own: authority taken from a token ends with it (its revocation ends what it minted too, see revoke).
 */
function expiryFor(caller: Principal, request: CreateServiceAccountDto, now: Date): Date | null {
  const asked = request.never_expires ? null : now.getTime() + (request.expires_in_days ?? DEFAULT_EXPIRY_DAYS) * DAY_MS;
  const limit = caller.kind === 'service_account' ? (caller.expiresAtMs ?? null) : null;
  const expiresAtMs = limit === null ? asked : Math.min(asked ?? limit, limit);
  return expiresAtMs === null ? null : new Date(expiresAtMs);
}

/** A scope as an error names it: long ones cut, so a request cannot make its error kilobytes long. */
function quotedScope(scope: string): string {
  return scope.length > 80 ? `${scope.slice(0, 80)}…` : scope;
}

/** Told of the accounts a revoke ended (the accounts they minted included), once it has committed. */
export type RevocationListener = (accountIds: string[]) => Promise<void>;

@Injectable()
export class ServiceAccountsService {
  private readonly logger = new Logger('ServiceAccounts');
  private readonly revocationListeners: RevocationListener[] = [];

  constructor(
    private readonly accounts: ServiceAccountRepository,
    private readonly verifier: ServiceAccountVerifier,
  ) {}

  /** What else ends with an account (its schedules stop at once, not at their next slot). A listener's failure fails no revoke. */
  onRevoked(listener: RevocationListener): void {
    this.revocationListeners.push(listener);
  }

  async mint(caller: Principal, request: CreateServiceAccountDto): Promise<CreatedServiceAccountDto> {
    const scopes = [...new Set(request.scopes?.map((grant) => grant.scope) ?? DEFAULT_SCOPES)];
    this.assertMayMint(caller, scopes, request.allow_privileged_scopes === true);
    await this.assertMayTakeName(caller, request.name);
    const token = generateToken();
    const now = new Date();
    const account = Object.assign(new ServiceAccountEntity(), {
      id: randomUUID(),
      name: request.name,
      ownerId: caller.userId,
      tokenHash: token.hash,
      tokenPrefix: token.prefix,
      scopes,
      createdAt: now,
      expiresAt: expiryFor(caller, request, now),
      lastUsedAt: null,
      lastUsedIp: null,
      previousTokenHash: null,
      previousTokenExpiresAt: null,
      revokedAt: null,
      nameReleasedAt: null,
    });
    await this.insertUnderUniqueName(account, caller.kind === 'service_account' ? (caller.serviceAccountId ?? null) : null);
    return { ...this.map(account), token: token.plaintext };
  }

  async list(caller: Principal, query: ListServiceAccountsQuery): Promise<Page<ServiceAccountDto>> {
    const startedAt = performance.now();
    const request = query.toPageRequest();
    const [rows, total] = await this.accounts.page(DataScope.of(caller), request, query.include_revoked);
    return toPage(
      request,
      rows.map((row) => this.map(row)),
      total,
      startedAt,
    );
  }

  /**
   * One-way and idempotent; this replica stops accepting the token at once, others within the cache TTL.
   * The accounts minted with the token (and theirs, on down) are revoked with it: they act on its authority.
   */
  async revoke(caller: Principal, id: string): Promise<ServiceAccountDto> {
    const scope = DataScope.of(caller);
    const account = await this.visible(scope, id);
    this.assertMayManage(caller, account, 'revoke');
    const revoked = await this.accounts.revokeWithMinted(id);
    revoked.forEach((accountId) => this.verifier.forget(accountId));
    if (revoked.length > 0) {
      this.logger.log(
        { revoked: revoked.length, account: account.name },
        `service account ${account.name} revoked (${revoked.length} with those it minted)`,
      );
      for (const listener of this.revocationListeners) {
        // What a listener leaves undone is caught up elsewhere (a schedule's fire checks its owner first).
        await listener(revoked).catch((error: unknown) => this.logger.error({ err: error }, 'a revocation listener failed'));
      }
    }
    return this.map((await this.accounts.findById(scope, id)) ?? account);
  }

  /**
   * A new token for an account the caller may revoke; the replaced one keeps working for `grace_seconds`.
   * The new token carries the account's scopes, so, as for minting, a real credential holding them is needed.
   * This replica applies the grace at once; others may accept the old token for up to the cache TTL longer.
   */
  async rotate(caller: Principal, id: string, request: RotateServiceAccountDto): Promise<CreatedServiceAccountDto> {
    const scope = DataScope.of(caller);
    const account = await this.visible(scope, id);
    this.assertMayManage(caller, account, 'rotate');
    this.assertMayGrant(caller, account.scopes);
    const token = generateToken();
    const graceEnd = new Date(Date.now() + (request.grace_seconds ?? DEFAULT_GRACE_SECONDS) * 1000);
    if (!(await this.accounts.rotate(id, { tokenHash: token.hash, tokenPrefix: token.prefix }, graceEnd))) {
      throw new ServiceAccountException(
        Code.NotActive,
        `Service account '${account.name}' is ${account.revokedAt ? 'revoked' : 'expired'}: only an active account can be rotated. Mint a new one instead.`,
      );
    }
    this.verifier.forget(id);
    return { ...this.map((await this.accounts.findById(scope, id)) ?? account), token: token.plaintext };
  }

  /** Is the account still good for work done on its behalf later (a schedule's fires)? */
  async standing(id: string): Promise<AccountStanding> {
    const account = await this.accounts.findById(DataScope.all(), id);
    if (!account) {
      return { state: 'missing', principal: null, scopes: [], expiresAtMs: null };
    }
    const principal = serviceAccountPrincipal(account.name);
    const { scopes } = account;
    const expiresAtMs = account.expiresAt?.getTime() ?? null;
    if (account.revokedAt) {
      return { state: 'revoked', principal, scopes, expiresAtMs };
    }
    if (expiresAtMs !== null && expiresAtMs <= Date.now()) {
      return { state: 'expired', principal, scopes, expiresAtMs };
    }
    return { state: 'active', principal, scopes, expiresAtMs };
  }

  /**
   * Valid scopes, privileged ones only when asked for, and none the caller lacks. (A real credential was checked
   * by the route: it hands out a token, so an anonymous caller never gets here.)
   */
  private assertMayMint(caller: Principal, scopes: string[], allowPrivileged: boolean): void {
    const invalid = scopes.filter((scope) => !isValidScope(scope));
    if (invalid.length > 0) {
      throw new ServiceAccountException(Code.InvalidScopes, `Invalid scope(s): ${invalid.map(quotedScope).join(', ')}`);
    }
    const privileged = scopes.filter(isPrivilegedScope);
    if (privileged.length > 0 && !allowPrivileged) {
      throw new ServiceAccountException(
        Code.PrivilegedNotAllowed,
        `Privileged scope(s) require allow_privileged_scopes=true: ${privileged.join(', ')}. Privileged tokens must be deliberate, never accidental.`,
      );
    }
    this.assertMayGrant(caller, scopes);
  }

  /**
   * What a token makes is kept under `sa:<name>` (its sessions, runs, schedules, memories), so a name used
   * before still holds that data. Only whoever minted the name last, or an admin, may mint it again:
   * anyone else would read and continue another principal's data.
   */
  private async assertMayTakeName(caller: Principal, name: string): Promise<void> {
    if (isAdmin(caller)) {
      return;
    }
    const previous = await this.accounts.lastOwnerOfName(name);
    if (previous !== undefined && previous !== caller.userId) {
      throw new ServiceAccountException(
        Code.NameTaken,
        `The name '${name}' belonged to another principal's service account, and what it made stays under sa:${name}: choose another name`,
      );
    }
  }

  /**
   * Revoking or rotating an account acts on its behalf: a rotation hands its identity (`sa:<name>`, with its
   * sessions and schedules) to whoever holds the new token. So only its minter or an admin may, even where
   * the caller may list it (a JWT user while user isolation is off sees every account).
   */
  private assertMayManage(caller: Principal, account: ServiceAccountEntity, action: 'revoke' | 'rotate'): void {
    if (mayChange(caller, account.ownerId)) {
      return;
    }
    throw new ServiceAccountException(
      Code.NotOwner,
      `Only the principal that minted service account '${account.name}', or an admin (platform:admin), may ${action} it`,
    );
  }

  /** A token carrying `scopes` goes only to an admin, or to a caller holding service_accounts:write and each of them. */
  private assertMayGrant(caller: Principal, scopes: readonly string[]): void {
    if (isAdmin(caller)) {
      return;
    }
    if (!covers(caller.scopes, MINT_SCOPE)) {
      throw new ServiceAccountException(Code.CannotGrant, `Insufficient permissions. Required scope(s): ${MINT_SCOPE}`);
    }
    const notHeld = scopes.filter((scope) => !covers(caller.scopes, scope));
    if (notHeld.length > 0) {
      throw new ServiceAccountException(Code.CannotGrant, `Cannot grant scope(s) you do not hold: ${notHeld.join(', ')}`);
    }
  }

  /** The account if the caller's scope sees it; 404 otherwise, so ids of others' accounts are not disclosed. */
  private async visible(scope: DataScope, id: string): Promise<ServiceAccountEntity> {
    const account = await this.accounts.findById(scope, id);
    if (!account) {
      throw new ServiceAccountException(Code.NotFound, `Service account '${id}' not found`);
    }
    return account;
  }

  /** An expired account no longer holds its name: it releases it (revoked_at stays null) so the name can be minted again. */
  private async insertUnderUniqueName(account: ServiceAccountEntity, minterId: string | null): Promise<void> {
    await this.accounts.releaseExpiredName(account.name);
    try {
      if (!(await this.accounts.insert(account, minterId))) {
        throw new ServiceAccountException(Code.MinterInactive, 'Invalid or expired service account token');
      }
    } catch (error) {
      if (isUniqueViolation(error, ACTIVE_NAME_CONSTRAINT)) {
        throw new ServiceAccountException(
          Code.NameTaken,
          `An active service account named '${account.name}' already exists. Rotate its token (POST /service-accounts/{id}/rotate: the old one keeps working for a grace period), or revoke it first.`,
        );
      }
      throw error;
    }
  }

  private map(account: ServiceAccountEntity): ServiceAccountDto {
    return {
      id: account.id,
      name: account.name,
      principal: serviceAccountPrincipal(account.name),
      token_prefix: account.tokenPrefix,
      scopes: account.scopes,
      created_by: account.ownerId,
      created_at: toEpoch(account.createdAt),
      expires_at: toEpoch(account.expiresAt),
      last_used_at: toEpoch(account.lastUsedAt),
      last_used_ip: account.lastUsedIp,
      revoked_at: toEpoch(account.revokedAt),
    };
  }
}

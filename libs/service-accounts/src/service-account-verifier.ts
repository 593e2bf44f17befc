import { Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';

import { Env } from '@app/config';
import { isDatabaseUnavailable } from '@app/database';

import { FailedLookupLimiter } from './failed-lookup-limiter';
import { ServiceAccountRepository } from './service-account.repository';
import { hashToken, looksLikeToken } from './token';

export interface VerifiedAccount {
  id: string;
  name: string;
  scopes: string[];
  /**
   * When this token stops verifying, in epoch milliseconds (null: never): the account's expiry, or for
   * a token a rotation replaced, the end of its grace if that comes first. Checked on every cache hit.
   */
  expiresAtMs: number | null;
}

export type Verification =
  { outcome: 'ok'; account: VerifiedAccount } | { outcome: 'invalid' } | { outcome: 'throttled' } | { outcome: 'unavailable' };

const CACHE_CAPACITY = 2048;
/** last_used_at is advisory: one write per account per minute per process is plenty. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

/**
 * Verifies `svc_pat_` tokens: an in-process cache of successful verifications
 * (expiry, and a rotated-out token's grace, re-checked on every hit), the
 * failed-lookup limiter, and throttled last_used_at / last_used_ip writes.
 * One instance per process, shared by REST and MCP.
 */
@Injectable()
export class ServiceAccountVerifier {
  private readonly logger = new Logger(ServiceAccountVerifier.name);
  /** Successful verifications by token hash; null when the TTL is 0 (every request reads the database). */
  private readonly cache: LRUCache<string, VerifiedAccount> | null;
  /**
   * Moves at every forget(): a lookup that began before it may have read the row the revoke or rotation then
   * changed, and is not cached (its answer stands for that one request, as if it had come a moment earlier).
   */
  private forgets = 0;
  /** Accounts whose last use was written within the interval, so it is not written again. */
  private readonly lastUsedWrites = new LRUCache<string, true>({ max: CACHE_CAPACITY, ttl: LAST_USED_WRITE_INTERVAL_MS });

  constructor(
    private readonly accounts: ServiceAccountRepository,
    private readonly limiter: FailedLookupLimiter,
    env: Env,
  ) {
    const ttl = env.SERVICE_ACCOUNT_CACHE_TTL_SECONDS * 1000;
    this.cache = ttl > 0 ? new LRUCache({ max: CACHE_CAPACITY, ttl }) : null;
  }

  async verify(token: string, clientKey: string): Promise<Verification> {
    const now = Date.now();
    const hash = hashToken(token);
    const cached = this.cache?.get(hash);
    if (cached) {
      return this.accept(cached, hash, now, clientKey, false);
    }
    let account: VerifiedAccount | null;
    const forgetsBefore = this.forgets;
    try {
      account = looksLikeToken(token) ? await this.lookUp(hash, now) : null;
    } catch (error) {
      if (isDatabaseUnavailable(error)) {
        return { outcome: 'unavailable' };
      }
      throw error;
    }
    return account ? this.accept(account, hash, now, clientKey, this.forgets === forgetsBefore) : this.reject(hash, clientKey);
  }

  /**
   * Called by the replica that handles a revoke or a rotation: its own cache forgets the account at once,
   * so the next request with a rotated-out token reads that token's grace from the database.
   */
  forget(accountId: string): void {
    this.forgets += 1;
    for (const [hash, account] of this.cache?.entries() ?? []) {
      if (account.id === accountId) {
        this.cache?.delete(hash);
      }
    }
  }

  private async lookUp(hash: string, now: number): Promise<VerifiedAccount | null> {
    const row = await this.accounts.findByTokenHash(hash);
    if (!row || row.revokedAt) {
      return null;
    }
    const accountExpiry = row.expiresAt?.getTime() ?? null;
    // The token a rotation replaced lives until its grace ends, never past the account's own expiry.
    const graceEnd = row.tokenHash === hash ? null : (row.previousTokenExpiresAt?.getTime() ?? now);
    const expiresAtMs = graceEnd === null ? accountExpiry : Math.min(graceEnd, accountExpiry ?? graceEnd);
    return { id: row.id, name: row.name, scopes: row.scopes, expiresAtMs };
  }

  /** `cacheable`: a lookup no forget() overtook (false for a cache hit, already cached). */
  private accept(account: VerifiedAccount, hash: string, now: number, clientKey: string, cacheable: boolean): Verification {
    if (account.expiresAtMs !== null && account.expiresAtMs <= now) {
      this.cache?.delete(hash);
      return { outcome: 'invalid' };
    }
    if (cacheable) {
      this.cache?.set(hash, account);
    }
    this.touch(account.id, clientKey);
    return { outcome: 'ok', account };
  }

  private async reject(hash: string, clientKey: string): Promise<Verification> {
    this.cache?.delete(hash);
    if (await this.limiter.isThrottled(clientKey)) {
      return { outcome: 'throttled' };
    }
    await this.limiter.recordFailure(clientKey);
    return { outcome: 'invalid' };
  }

  private touch(accountId: string, clientIp: string): void {
    if (this.lastUsedWrites.has(accountId)) {
      return;
    }
    this.lastUsedWrites.set(accountId, true);
    this.accounts.touchLastUsed(accountId, clientIp).catch((error: unknown) => {
      this.logger.warn({ err: error, account_id: accountId }, 'Could not record last_used_at');
    });
  }
}

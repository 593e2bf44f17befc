import { Injectable, Logger } from '@nestjs/common';

import { Env } from '@app/config';
import { isDatabaseUnavailable } from '@app/database';

import { FailedLookupLimiter } from './failed-lookup-limiter';
import { LruMap } from './lru';
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
  | { outcome: 'ok'; account: VerifiedAccount }
  | { outcome: 'invalid' }
  | { outcome: 'throttled' }
  | { outcome: 'unavailable' };

interface CacheEntry {
  account: VerifiedAccount;
  cachedAtMs: number;
}

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
  private readonly cache = new LruMap<string, CacheEntry>(CACHE_CAPACITY);
  private readonly limiter = new FailedLookupLimiter();
  private readonly lastUsedWrites = new LruMap<string, number>(CACHE_CAPACITY);
  private readonly cacheTtlMs: number;

  constructor(
    private readonly accounts: ServiceAccountRepository,
    env: Env,
  ) {
    this.cacheTtlMs = env.SERVICE_ACCOUNT_CACHE_TTL_SECONDS * 1000;
  }

  async verify(token: string, clientKey: string): Promise<Verification> {
    const now = Date.now();
    const hash = hashToken(token);
    const cached = this.cacheTtlMs > 0 ? this.cache.get(hash) : undefined;
    if (cached && now - cached.cachedAtMs < this.cacheTtlMs) {
      return this.accept(cached.account, hash, now, clientKey, false);
    }
    let account: VerifiedAccount | null;
    try {
      account = looksLikeToken(token) ? await this.lookUp(hash, now) : null;
    } catch (error) {
      if (isDatabaseUnavailable(error)) {
        return { outcome: 'unavailable' };
      }
      throw error;
    }
    return account ? this.accept(account, hash, now, clientKey, true) : this.reject(hash, clientKey, now);
  }

  /**
   * Called by the replica that handles a revoke or a rotation: its own cache forgets the account at once,
   * so the next request with a rotated-out token reads that token's grace from the database.
   */
  forget(accountId: string): void {
    this.cache.deleteWhere((entry) => entry.account.id === accountId);
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

  private accept(account: VerifiedAccount, hash: string, now: number, clientKey: string, fresh: boolean): Verification {
    if (account.expiresAtMs !== null && account.expiresAtMs <= now) {
      this.cache.delete(hash);
      return { outcome: 'invalid' };
    }
    if (fresh && this.cacheTtlMs > 0) {
      this.cache.set(hash, { account, cachedAtMs: now });
    }
    this.touch(account.id, now, clientKey);
    return { outcome: 'ok', account };
  }

  private reject(hash: string, clientKey: string, now: number): Verification {
    this.cache.delete(hash);
    if (this.limiter.isThrottled(clientKey, now)) {
      return { outcome: 'throttled' };
    }
    this.limiter.recordFailure(clientKey, now);
    return { outcome: 'invalid' };
  }

  private touch(accountId: string, now: number, clientIp: string): void {
    const last = this.lastUsedWrites.get(accountId);
    if (last !== undefined && now - last < LAST_USED_WRITE_INTERVAL_MS) {
      return;
    }
    this.lastUsedWrites.set(accountId, now);
    this.accounts.touchLastUsed(accountId, clientIp).catch((error: unknown) => {
      this.logger.warn(`Could not record last_used_at for ${accountId}: ${error instanceof Error ? error.message : String(error)}`);
    });
  }
}

import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { RateLimiterPostgres } from 'rate-limiter-flexible';
import { DataSource } from 'typeorm';

import { poolOf } from '@app/database';

export const FAILED_LOOKUP_LIMIT = 20;
export const FAILED_LOOKUP_WINDOW_SECONDS = 60;
/** Created by the FailedLookups migration, in the shape rate-limiter-flexible expects. */
export const FAILED_LOOKUPS_TABLE = 'failed_token_lookups';

/**
 * Failed token lookups per client address (rate-limiter-flexible on PostgreSQL, so the budget holds
 * across api replicas): after FAILED_LOOKUP_LIMIT failures within a FAILED_LOOKUP_WINDOW_SECONDS window,
 * further failures answer 429 instead of 401 until the window ends. A throttled attempt is not counted,
 * so the window ends on its own. A valid token never reaches this.
 */
@Injectable()
export class FailedLookupLimiter {
  private readonly logger = new Logger(FailedLookupLimiter.name);
  private readonly limiter: RateLimiterPostgres;

  constructor(@InjectDataSource() dataSource: DataSource) {
    this.limiter = new RateLimiterPostgres({
      storeClient: poolOf(dataSource),
      tableName: FAILED_LOOKUPS_TABLE,
      tableCreated: true,
      keyPrefix: 'token',
      points: FAILED_LOOKUP_LIMIT,
      duration: FAILED_LOOKUP_WINDOW_SECONDS,
    });
  }

  async isThrottled(clientKey: string): Promise<boolean> {
    const state = await this.limiter.get(clientKey).catch((error: unknown) => this.failOpen(error));
    return state !== null && state.consumedPoints >= FAILED_LOOKUP_LIMIT;
  }

  async recordFailure(clientKey: string): Promise<void> {
    // penalty() adds a point without refusing: refusing is isThrottled's decision.
    await this.limiter.penalty(clientKey, 1).catch((error: unknown) => this.failOpen(error));
  }

  /** The limiter is a brake on guessing, not a gate: when its store fails, lookups go on and answer 401. */
  private failOpen(error: unknown): null {
    this.logger.warn({ err: error }, 'Failed-lookup limiter unavailable; lookups go on unthrottled');
    return null;
  }
}

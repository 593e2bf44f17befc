import { LruMap } from './lru';

export const FAILED_LOOKUP_LIMIT = 20;
export const FAILED_LOOKUP_WINDOW_MS = 60_000;

/**
 * Sliding-window count of failed token lookups per client address: after
 * FAILED_LOOKUP_LIMIT failures within FAILED_LOOKUP_WINDOW_MS, further failures
 * answer 429 instead of 401. Throttled attempts are not recorded, so the window
 * drains on its own. In-process: each replica keeps its own budget.
 */
export class FailedLookupLimiter {
  private readonly failures = new LruMap<string, number[]>(1024);

  constructor(
    private readonly limit = FAILED_LOOKUP_LIMIT,
    private readonly windowMs = FAILED_LOOKUP_WINDOW_MS,
  ) {}

  isThrottled(clientKey: string, now = Date.now()): boolean {
    return this.recent(clientKey, now).length >= this.limit;
  }

  recordFailure(clientKey: string, now = Date.now()): void {
    this.failures.set(clientKey, [...this.recent(clientKey, now), now]);
  }

  private recent(clientKey: string, now: number): number[] {
    return (this.failures.get(clientKey) ?? []).filter((at) => now - at < this.windowMs);
  }
}

import { describe, expect, it } from 'vitest';

import { FailedLookupLimiter } from './failed-lookup-limiter';

describe('FailedLookupLimiter', () => {
  it('throttles after the limit within the window, per client', () => {
    const limiter = new FailedLookupLimiter(3, 1000);
    for (let i = 0; i < 3; i += 1) {
      expect(limiter.isThrottled('a', 100)).toBe(false);
      limiter.recordFailure('a', 100);
    }
    expect(limiter.isThrottled('a', 100)).toBe(true);
    expect(limiter.isThrottled('b', 100)).toBe(false);
  });

  it('slides: old failures drain out of the window', () => {
    const limiter = new FailedLookupLimiter(2, 1000);
    limiter.recordFailure('a', 0);
    limiter.recordFailure('a', 600);
    expect(limiter.isThrottled('a', 900)).toBe(true);
    expect(limiter.isThrottled('a', 1001)).toBe(false);
  });
});

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { LastingCondition } from './lasting-condition';

describe('LastingCondition', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('is said when it starts, once a period while it lasts with the count since, and once when it ends', () => {
    const said: string[] = [];
    const condition = new LastingCondition(60_000);
    condition.ended((n) => said.push(`ended ${n}`));
    condition.met(3, (n) => said.push(`met ${n}`));
    vi.advanceTimersByTime(59_999);
    condition.met(2, (n) => said.push(`met ${n}`));
    condition.met(1, (n) => said.push(`met ${n}`));
    vi.advanceTimersByTime(1);
    condition.met(4, (n) => said.push(`met ${n}`));
    condition.met(5, (n) => said.push(`met ${n}`));
    condition.ended((n) => said.push(`ended ${n}`));
    condition.ended((n) => said.push(`ended ${n}`));
    condition.met(1, (n) => said.push(`met ${n}`));
    expect(said).toEqual(['met 3', 'met 7', 'ended 5', 'met 1']);
  });

  it('ends when quiet only once a period has passed since it was last met', () => {
    const said: string[] = [];
    const condition = new LastingCondition(60_000);
    condition.met(1, (n) => said.push(`met ${n}`));
    vi.advanceTimersByTime(30_000);
    condition.met(1, (n) => said.push(`met ${n}`));
    vi.advanceTimersByTime(59_999);
    condition.endedIfQuiet((n) => said.push(`ended ${n}`));
    vi.advanceTimersByTime(1);
    condition.endedIfQuiet((n) => said.push(`ended ${n}`));
    condition.endedIfQuiet((n) => said.push(`ended ${n}`));
    expect(said).toEqual(['met 1', 'ended 1']);
  });
});

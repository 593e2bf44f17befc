import { describe, expect, it } from 'vitest';

import { pooledRandomBytes, timeOrderedId } from './time-ordered-id';

const hexOf = (id: string) => id.replaceAll('-', '');

describe('timeOrderedId', () => {
  it('is a UUIDv7 that begins with the time it was made, in milliseconds', () => {
    const before = Date.now();
    const id = timeOrderedId();
    const after = Date.now();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const millis = parseInt(hexOf(id).slice(0, 12), 16);
    expect(millis).toBeGreaterThanOrEqual(before);
    expect(millis).toBeLessThanOrEqual(after);
  });

  it('sorts ids made later after earlier ones, and draws the bits after the time afresh for each', () => {
    const ids = Array.from({ length: 1000 }, () => timeOrderedId());
    const times = ids.map((id) => hexOf(id).slice(0, 12));
    expect(times).toEqual([...times].sort());
    // A counter within one millisecond (the library's default) would leave the 12 bits after the version
    // alike in ids of the same millisecond; drawn afresh, two share them once in 2,048 (the first of them is always 0).
    const sameMillisecond = ids.slice(1).filter((id, i) => hexOf(id).slice(0, 12) === hexOf(ids[i]).slice(0, 12));
    const alike = ids.slice(1).filter((id, i) => hexOf(id).slice(0, 16) === hexOf(ids[i]).slice(0, 16));
    expect(sameMillisecond.length).toBeGreaterThan(100);
    expect(alike.length).toBeLessThan(10);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('pooledRandomBytes', () => {
  it('hands out each byte once, and a refill of the pool leaves bytes handed out earlier as they were', () => {
    const first = pooledRandomBytes(16);
    const kept = Buffer.from(first);
    // More than the pool holds, so that it is refilled at least once meanwhile.
    const later = Array.from({ length: 600 }, () => pooledRandomBytes(16).toString('hex'));
    expect(first.equals(kept)).toBe(true);
    expect(new Set([kept.toString('hex'), ...later]).size).toBe(later.length + 1);
  });
});

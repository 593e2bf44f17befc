import { describe, expect, it } from 'vitest';

import { cronProblem, isTimeZone, nextRunAt } from './cron';

/** Successive slots after `from`, as ISO strings in UTC. */
function slots(expression: string, timeZone: string, from: string, count: number): string[] {
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < count; i += 1) {
    at = nextRunAt(expression, timeZone, at)!;
    out.push(at.toISOString());
  }
  return out;
}

describe('cron', () => {
  it('accepts five fields and nicknames, refuses the rest with a reason', () => {
    expect(cronProblem('*/5 * * * *')).toBeNull();
    expect(cronProblem('0 9 * * MON-FRI')).toBeNull();
    expect(cronProblem('@daily')).toBeNull();
    expect(cronProblem('* * * *')).toMatch(/five fields/);
    expect(cronProblem('0 * * * * *')).toMatch(/five fields/);
    expect(cronProblem('61 * * * *')).toMatch(/invalid/);
    expect(cronProblem('0 0 30 2 *')).toMatch(/never matches/);
    expect(cronProblem('@sometimes')).toMatch(/invalid/);
  });

  it('knows IANA zones and refuses offsets and unknown names', () => {
    for (const zone of ['UTC', 'Europe/Berlin', 'America/New_York', 'America/Argentina/Buenos_Aires']) {
      expect(isTimeZone(zone), zone).toBe(true);
    }
    for (const zone of ['Mars/Base', '+01:00', 'Europe/', '', 'Europe/Berlin ']) {
      expect(isTimeZone(zone), zone).toBe(false);
    }
  });

  it('answers the first slot strictly after any instant within a second, and a fresh Date each time', () => {
    const at = (iso: string) => nextRunAt('* * * * *', 'UTC', new Date(iso))?.toISOString();
    expect(at('2026-05-01T12:00:59.999Z')).toBe('2026-05-01T12:01:00.000Z');
    expect(at('2026-05-01T12:01:00.000Z')).toBe('2026-05-01T12:02:00.000Z');
    expect(at('2026-05-01T12:01:00.400Z')).toBe('2026-05-01T12:02:00.000Z');
    const first = nextRunAt('0 * * * *', 'UTC', new Date('2026-05-01T12:30:00Z'))!;
    first.setFullYear(2000);
    expect(nextRunAt('0 * * * *', 'UTC', new Date('2026-05-01T12:30:00Z'))!.toISOString()).toBe('2026-05-01T13:00:00.000Z');
  });

  describe('America/New_York (spring forward 2026-03-08 02:00, fall back 2026-11-01 02:00)', () => {
    it('runs a daily 02:30 job at 03:00 EDT on the day 02:30 does not exist', () => {
      expect(slots('30 2 * * *', 'America/New_York', '2026-03-06T12:00:00Z', 3)).toEqual([
        '2026-03-07T07:30:00.000Z', // 02:30 EST
        '2026-03-08T07:00:00.000Z', // 03:00 EDT: first valid time after the gap
        '2026-03-09T06:30:00.000Z', // 02:30 EDT
      ]);
    });

    it('runs a daily 01:30 job once on the day 01:30 happens twice', () => {
      expect(slots('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 3)).toEqual([
        '2026-11-01T05:30:00.000Z', // 01:30 EDT, the first occurrence only
        '2026-11-02T06:30:00.000Z', // 01:30 EST
        '2026-11-03T06:30:00.000Z',
      ]);
    });

    it('keeps an every-30-minutes job on real elapsed time through the repeated hour', () => {
      expect(slots('*/30 * * * *', 'America/New_York', '2026-11-01T05:00:00Z', 4)).toEqual([
        '2026-11-01T05:30:00.000Z', // 01:30 EDT
        '2026-11-01T06:00:00.000Z', // 01:00 EST
        '2026-11-01T06:30:00.000Z', // 01:30 EST
        '2026-11-01T07:00:00.000Z', // 02:00 EST
      ]);
    });
  });

  describe('Europe/Berlin (spring forward 2026-03-29 02:00, fall back 2026-10-25 03:00)', () => {
    it('runs a daily 02:15 job at 03:00 CEST on the day 02:15 does not exist', () => {
      expect(slots('15 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', 3)).toEqual([
        '2026-03-28T01:15:00.000Z', // 02:15 CET
        '2026-03-29T01:00:00.000Z', // 03:00 CEST
        '2026-03-30T00:15:00.000Z', // 02:15 CEST
      ]);
    });

    it('runs a daily 02:30 job once on the day 02:30 happens twice', () => {
      expect(slots('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 3)).toEqual([
        '2026-10-25T00:30:00.000Z', // 02:30 CEST, the first occurrence only
        '2026-10-26T01:30:00.000Z', // 02:30 CET
        '2026-10-27T01:30:00.000Z',
      ]);
    });

    it('keeps an every-15-minutes job on real elapsed time across the spring-forward gap', () => {
      // 01:45 CET is 00:45Z; the next quarter hours are 02:00-02:45 local, which do not exist: 03:00 CEST
      // is 01:00Z, fifteen real minutes later. Slots in the gap, or a repeated or skipped real quarter, fail here.
      const got = slots('*/15 * * * *', 'Europe/Berlin', '2026-03-29T00:30:00Z', 5);
      expect(got).toEqual([
        '2026-03-29T00:45:00.000Z', // 01:45 CET
        '2026-03-29T01:00:00.000Z', // 03:00 CEST
        '2026-03-29T01:15:00.000Z', // 03:15 CEST
        '2026-03-29T01:30:00.000Z',
        '2026-03-29T01:45:00.000Z',
      ]);
      const gaps = got.slice(1).map((at, i) => Date.parse(at) - Date.parse(got[i]));
      expect(gaps).toEqual([15 * 60_000, 15 * 60_000, 15 * 60_000, 15 * 60_000]);
    });

    it('keeps local wall-clock time for a 09:00 job across both changes', () => {
      expect(slots('0 9 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', 2)).toEqual([
        '2026-03-29T07:00:00.000Z',
        '2026-03-30T07:00:00.000Z',
      ]);
      expect(slots('0 9 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2)).toEqual([
        '2026-10-25T08:00:00.000Z',
        '2026-10-26T08:00:00.000Z',
      ]);
    });
  });
});

import { describe, expect, it } from 'vitest';

import { nextRunAt } from './cron';
import { catchUp } from './schedule-dispatch.repository';

/** Every slot from `from` (itself included) up to `now`, walked forward one at a time: the oracle. */
function walkedSlots(expression: string, timeZone: string, from: Date, now: Date): string[] {
  const slots = [from];
  for (let slot = nextRunAt(expression, timeZone, from); slot && slot <= now; slot = nextRunAt(expression, timeZone, slot)) {
    slots.push(slot);
  }
  return slots.map((slot) => slot.toISOString());
}

const iso = (slots: Date[]) => slots.map((slot) => slot.toISOString());

/**
 * A worker back after an outage: which missed slots fire and which are recorded, whatever the outage's length.
 * Across the spring-forward change in Berlin (2026-03-29), for a fixed-time job (few slots, walked forward) and
 * an interval job (thousands, the latest read backwards from now).
 */
describe('catchUp after an outage', () => {
  const from = new Date('2026-03-20T00:00:00.000Z');
  const now = new Date('2026-04-02T00:00:30.000Z');
  const cases = [
    { cron_expr: '30 2 * * *', timezone: 'Europe/Berlin' },
    { cron_expr: '*/5 * * * *', timezone: 'Europe/Berlin' },
    { cron_expr: '* * * * *', timezone: 'UTC' },
  ];

  // How many of the latest slots each policy fires. The latest is on time while it is at most a minute late, and
  // fires whatever the policy; the others were missed: once fires the latest of them, all catchup_limit of them,
  // skip none. The 100 slots before those are recorded as missed.
  const onTime = (latest: string) => (now.getTime() - Date.parse(latest) <= 60_000 ? 1 : 0);
  const policies = [
    { catchup_policy: 'once', catchup_limit: 10, fired: (latest: string) => 1 + onTime(latest) },
    { catchup_policy: 'all', catchup_limit: 7, fired: (latest: string) => 7 + onTime(latest) },
    { catchup_policy: 'skip', catchup_limit: 10, fired: onTime },
  ] as const;

  it.each(cases.flatMap((schedule) => policies.map((policy) => ({ ...schedule, ...policy }))))(
    '$cron_expr in $timezone, catchup $catchup_policy: the latest slots fire as the policy says, the 100 before are missed',
    ({ fired, ...row }) => {
      const slots = walkedSlots(row.cron_expr, row.timezone, from, now);
      const firing = fired(slots[slots.length - 1]);
      const plan = catchUp({ ...row, next_run_at: from }, now);
      expect(iso(plan.fire)).toEqual(slots.slice(slots.length - firing));
      expect(iso(plan.missed)).toEqual(slots.slice(0, slots.length - firing).slice(-100));
    },
  );

  it('once and all fire missed slots besides a slot on time; skip fires that one alone', () => {
    // Every worker down from 10:00:30 to 10:03:15: 10:01 and 10:02 were missed, 10:03 is on time.
    const back = new Date('2026-04-02T10:03:15.000Z');
    const row = { cron_expr: '* * * * *', timezone: 'UTC', next_run_at: new Date('2026-04-02T10:01:00.000Z'), catchup_limit: 2 };
    const at = (minute: number) => new Date(`2026-04-02T10:0${minute}:00.000Z`);
    expect(catchUp({ ...row, catchup_policy: 'all' }, back)).toEqual({ fire: [at(1), at(2), at(3)], missed: [] });
    expect(catchUp({ ...row, catchup_policy: 'all', catchup_limit: 1 }, back)).toEqual({ fire: [at(2), at(3)], missed: [at(1)] });
    expect(catchUp({ ...row, catchup_policy: 'once' }, back)).toEqual({ fire: [at(2), at(3)], missed: [at(1)] });
    expect(catchUp({ ...row, catchup_policy: 'skip' }, back)).toEqual({ fire: [at(3)], missed: [at(1), at(2)] });
  });

  it('a slot that is simply due (no outage) fires alone', () => {
    const due = new Date('2026-04-02T00:00:00.000Z');
    expect(catchUp({ cron_expr: '* * * * *', timezone: 'UTC', next_run_at: due, catchup_policy: 'once', catchup_limit: 10 }, now)).toEqual({
      fire: [due],
      missed: [],
    });
  });
});

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

  it.each(cases)('$cron_expr in $timezone, catchup once: the latest slot fires, the 100 before it are recorded as missed', (schedule) => {
    const slots = walkedSlots(schedule.cron_expr, schedule.timezone, from, now);
    const plan = catchUp({ ...schedule, next_run_at: from, catchup_policy: 'once', catchup_limit: 10 }, now);
    expect(iso(plan.fire)).toEqual(slots.slice(-1));
    expect(iso(plan.missed)).toEqual(slots.slice(0, -1).slice(-100));
  });

  it.each(cases)(
    '$cron_expr in $timezone, catchup all: the latest catchup_limit fire, oldest first, the 100 before are missed',
    (schedule) => {
      const slots = walkedSlots(schedule.cron_expr, schedule.timezone, from, now);
      const plan = catchUp({ ...schedule, next_run_at: from, catchup_policy: 'all', catchup_limit: 7 }, now);
      expect(iso(plan.fire)).toEqual(slots.slice(-7));
      expect(iso(plan.missed)).toEqual(slots.slice(0, -7).slice(-100));
    },
  );

  it.each(cases)(
    '$cron_expr in $timezone, catchup skip: only a latest slot not yet a minute late fires; the 100 before are missed',
    (schedule) => {
      const slots = walkedSlots(schedule.cron_expr, schedule.timezone, from, now);
      const latestOnTime = now.getTime() - new Date(slots[slots.length - 1]).getTime() <= 60_000;
      const fired = latestOnTime ? slots.slice(-1) : [];
      const plan = catchUp({ ...schedule, next_run_at: from, catchup_policy: 'skip', catchup_limit: 10 }, now);
      expect(iso(plan.fire)).toEqual(fired);
      expect(iso(plan.missed)).toEqual(slots.slice(0, slots.length - fired.length).slice(-100));
    },
  );

  it('a slot that is simply due (no outage) fires alone', () => {
    const due = new Date('2026-04-02T00:00:00.000Z');
    expect(catchUp({ cron_expr: '* * * * *', timezone: 'UTC', next_run_at: due, catchup_policy: 'once', catchup_limit: 10 }, now)).toEqual({
      fire: [due],
      missed: [],
    });
  });
});

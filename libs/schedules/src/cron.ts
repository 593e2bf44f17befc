import { Cron } from 'croner';
import { LRUCache } from 'lru-cache';

/**
 * Cron and time zones, in one place. `croner` over `cron-parser`: it resolves IANA zones
 * through Intl with no extra dependency (cron-parser pulls in luxon), and it documents its
 * DST rules, which we take as ours (Vixie cron's): a fixed-time job whose time falls in the
 * spring-forward gap runs at the first valid time after it, and once when the autumn hour
 * repeats; an interval job (`*` or a step in minute/hour) skips the gap and runs on both
 * occurrences of the repeated hour, because it follows real elapsed time.
 */
const CRON_OPTIONS = { paused: true, mode: '5-part', fixedTimeRule: 'no-wildcard' } as const;

/** Nicknames (`@daily`) or the classic five fields; seconds and years are not offered. */
const FIVE_FIELDS = /^\s*(@\w+|\S+(\s+\S+){4})\s*$/;

/** Why `expression` is not a usable cron expression, or null when it is. */
export function cronProblem(expression: string): string | null {
  if (!FIVE_FIELDS.test(expression)) {
    return 'cron_expr must have five fields (minute hour day-of-month month day-of-week) or be a nickname such as @daily';
  }
  try {
    if (new Cron(expression, CRON_OPTIONS).nextRun() === null) {
      return 'cron_expr never matches a date';
    }
    return null;
  } catch (error) {
    return `cron_expr is invalid: ${(error as Error).message.replace(/^CronPattern:\s*/, '')}`;
  }
}

/** An IANA zone name (`Europe/Berlin`, `UTC`); UTC offsets like `+01:00` are refused. */
export function isTimeZone(name: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(name)) {
    return false;
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * Slots already computed, by zone, expression and start second. A slot depends on nothing else, and a tick
 * asks for one per due schedule: schedules sharing an expression (most do) share their slots, and croner
 * took about 50 µs for each (its time-zone arithmetic), so 10,000 schedules due together held the worker
 * for half a second. Null (never again) is kept as such.
 */
const slots = new LRUCache<string, { next: Date | null }>({ max: 10_000 });

/** The first slot strictly after `from`, in `timeZone`; null when the expression never fires again. */
export function nextRunAt(expression: string, timeZone: string, from: Date = new Date()): Date | null {
  // Slots fall on whole seconds, so the first one after `from` is the first one after its second.
  const second = Math.floor(from.getTime() / 1000) * 1000;
  const key = `${timeZone}\u0000${expression}\u0000${second}`;
  let slot = slots.get(key);
  if (!slot) {
    slot = { next: new Cron(expression, { ...CRON_OPTIONS, timezone: timeZone }).nextRun(new Date(second)) };
    slots.set(key, slot);
  }
  return slot.next === null ? null : new Date(slot.next);
}

/**
 * The latest `count` slots in (`after`, `until`], oldest first, read backwards from `until`: what a catch-up after
 * a long outage keeps costs the same whatever the outage's length. (croner reads both ways with the same DST
 * rules; checked slot for slot against nextRunAt over two years of DST changes in several zones.)
 */
export function latestSlots(expression: string, timeZone: string, after: Date, until: Date, count: number): Date[] {
  // A slot in the same second as the reference, but earlier, is included: 1 ms past `until` includes `until` itself.
  const runs = new Cron(expression, { ...CRON_OPTIONS, timezone: timeZone }).previousRuns(count, new Date(until.getTime() + 1));
  return runs.filter((slot) => slot > after).reverse();
}

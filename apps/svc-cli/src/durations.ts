import { InvalidOptionValue } from './options';

/** Durations the CLI's flags take (`--since 1h`, `--grace 15m`, `--expires 90d`): one parser, each flag naming the units it allows. */
export const DURATION_UNITS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;
export type DurationUnit = keyof typeof DURATION_UNITS;

/** The server's bounds for a rotation's grace (POST /service-accounts/{id}/rotate). */
export const MAX_GRACE_SECONDS = 86_400;
/** What `svc tokens rotate` without --grace and `svc connect --rotate` give the old token: the server's default. */
export const DEFAULT_GRACE_SECONDS = 3600;

/**
 * `<digits>[unit]` (case-insensitive, surrounding blanks ignored) in seconds: a unit from `units`,
 * or none, which means `plain`. Anything else (another unit, a sign, a fraction, an unsafe number) is null.
 */
export function parseDuration(text: string, options: { units: readonly DurationUnit[]; plain: DurationUnit }): number | null {
  const match = /^(\d+)([a-z]?)$/.exec(text.trim().toLowerCase());
  if (!match) {
    return null;
  }
  const unit = (match[2] || options.plain) as DurationUnit;
  if (match[2] && !options.units.includes(unit)) {
    return null;
  }
  const seconds = Number(match[1]) * DURATION_UNITS[unit];
  return Number.isSafeInteger(seconds) ? seconds : null;
}

/** `--since`: '30s', '15m', '1h', '2d' or plain seconds, in seconds; anything else is a usage error. */
export function parseSince(value: string): number {
  const seconds = parseDuration(value, { units: ['s', 'm', 'h', 'd'], plain: 's' });
  if (!seconds) {
    throw new InvalidOptionValue("Use a duration such as '30s', '15m', '1h', '2d' or a number of seconds.");
  }
  return seconds;
}

/**
 * `--grace`: a duration as `30s`, `15m`, `1h`, `1d` or plain seconds, within 0..1d. Anything else is a usage
 * error naming the option (exit 2), caught before any request is made.
 */
export function parseGrace(value: string): number {
  const seconds = parseDuration(value, { units: ['s', 'm', 'h', 'd'], plain: 's' });
  if (seconds === null) {
    throw new InvalidOptionValue("Use a duration like '30s', '15m', '1h', '1d', or plain seconds.");
  }
  if (seconds > MAX_GRACE_SECONDS) {
    throw new InvalidOptionValue(`The grace is at most 1d (${MAX_GRACE_SECONDS} seconds).`);
  }
  return seconds;
}

/** `3600` as `1h`, `90` as `90s`: how the CLI reports a grace back. */
export function formatDuration(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    const size = DURATION_UNITS[unit];
    if (seconds >= size && seconds % size === 0) {
      return `${seconds / size}${unit}`;
    }
  }
  return `${seconds}s`;
}

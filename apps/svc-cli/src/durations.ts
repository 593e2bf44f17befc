import { InvalidOptionValue } from './options';

/** Durations the CLI's flags take (`--since 1h`, `--expires 90d`): one parser, each flag naming the units it allows. */
export const DURATION_UNITS = { s: 1, m: 60, h: 3_600, d: 86_400 } as const;
export type DurationUnit = keyof typeof DURATION_UNITS;

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

import { InvalidOptionValue } from './options';

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** The server's bounds for a rotation's grace (POST /service-accounts/{id}/rotate). */
export const MAX_GRACE_SECONDS = 86_400;
/** What `svc tokens rotate` without --grace and `svc connect --rotate` give the old token: the server's default. */
export const DEFAULT_GRACE_SECONDS = 3600;

/**
 * `--grace`: a duration as `30s`, `15m`, `1h`, `1d` or plain seconds, within 0..1d. Anything else is a usage
 * error naming the option (exit 2), caught before any request is made.
 */
export function parseGrace(value: string): number {
  const match = /^(\d{1,6})([smhd]?)$/.exec(value.trim().toLowerCase());
  if (!match) {
    throw new InvalidOptionValue("Use a duration like '30s', '15m', '1h', '1d', or plain seconds.");
  }
  const seconds = Number(match[1]) * UNIT_SECONDS[match[2] || 's'];
  if (seconds > MAX_GRACE_SECONDS) {
    throw new InvalidOptionValue(`The grace is at most 1d (${MAX_GRACE_SECONDS} seconds).`);
  }
  return seconds;
}

/** `3600` as `1h`, `90` as `90s`: how the CLI reports a grace back. */
export function formatDuration(seconds: number): string {
  for (const [unit, size] of [['d', 86_400], ['h', 3600], ['m', 60]] as const) {
    if (seconds >= size && seconds % size === 0) {
      return `${seconds / size}${unit}`;
    }
  }
  return `${seconds}s`;
}

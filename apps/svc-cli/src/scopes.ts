import { CliError } from '@app/cli-terminal';
import { isPrivilegedScope } from '@app/scopes';

import { DURATION_UNITS, parseDuration } from './durations';
import { InvalidOptionValue } from './options';

/** The server's bound for a token's lifetime (POST /service-accounts, expires_in_days). */
const MAX_EXPIRY_DAYS = 3650;

/**
 * `--expires`: days as `90d` or `30` (at most 3650), or `never`. Returns the day count, or null for never.
 * Anything else is a usage error naming the option (exit 2, stderr, no JSON), raised while commander
 * parses the flags, before anything is sent.
 */
export function parseExpires(value: string): number | null {
  const text = value.trim().toLowerCase();
  if (text === 'never') {
    return null;
  }
  const seconds = parseDuration(text, { units: ['d'], plain: 'd' });
  const days = seconds === null ? 0 : seconds / DURATION_UNITS.d;
  if (!days) {
    throw new InvalidOptionValue("Use a number of days ('90d', '30') or 'never'.");
  }
  if (days > MAX_EXPIRY_DAYS) {
    throw new InvalidOptionValue(`A token lives at most ${MAX_EXPIRY_DAYS} days; use 'never' for no expiry.`);
  }
  return days;
}

/** Privileged scopes (the server's rule: write, delete, admin, service_accounts) must be asked for with --privileged. */
export function requirePrivilegedFlag(scopes: readonly string[], privileged: boolean | undefined): void {
  const needing = scopes.filter(isPrivilegedScope);
  if (needing.length && !privileged) {
    throw new CliError(
      `Privileged scope(s) need --privileged: ${needing.join(', ')}`,
      'Privileged tokens must be deliberate: pass --privileged.',
    );
  }
}

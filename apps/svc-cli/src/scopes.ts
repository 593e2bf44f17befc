import { isPrivilegedScope } from '@app/access';
import { CliError } from '@app/cli-terminal';

import { DURATION_UNITS, parseDuration } from './durations';
import { InvalidOptionValue } from './options';

/**
 * `--expires`: days as `90d` or `30`, or `never`. Returns the day count, or null for never.
 * The upper bound is the server's (3650), so its error names it. Anything else is a usage error
 * naming the option (exit 2, stderr, no JSON), raised while commander parses the flags.
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

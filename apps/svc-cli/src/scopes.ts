import { CliError } from '@app/cli-terminal';

/**
 * `--expires`: days as `90d` or `30`, or `never`. Returns the day count, or null for never.
 * The upper bound is the server's (3650), so its error names it.
 */
export function parseExpires(value: string): number | null {
  const text = value.trim().toLowerCase();
  if (text === 'never') {
    return null;
  }
  const match = /^(\d+)d?$/.exec(text);
  const days = match ? Number(match[1]) : 0;
  if (!days) {
    throw new CliError(`Invalid --expires value: ${value}`, "Use a number of days ('90d', '30') or 'never'.");
  }
  return days;
}

/** Scopes that need --privileged: any write or delete action, the admin scope, any service_accounts scope. */
export function privilegedScopes(scopes: string[]): string[] {
  return scopes.filter((scope) => {
    const parts = scope.split(':');
    const action = parts[parts.length - 1];
    return scope === 'platform:admin' || parts[0] === 'service_accounts' || action === 'write' || action === 'delete';
  });
}

import { CliError } from '@app/cli-terminal';

import { InvalidOptionValue } from './options';

export const SERVER_NAME = /^[A-Za-z0-9_-]+$/;
export const FALLBACK_SERVER_NAME = 'agentos';

/** `--server-name`: checked while the flags are parsed, so a bad one is a usage error (exit 2, no JSON). */
export function parseServerNameOption(value: string): string {
  if (!SERVER_NAME.test(value)) {
    throw new InvalidOptionValue("Use letters, digits, '-' and '_' only.");
  }
  return value;
}

/** The MCP entry name: --server-name as given, else derived from the service's name. */
export function serverNameFor(flag: string | undefined, serviceName: string | null): string {
  if (flag !== undefined) {
    if (!SERVER_NAME.test(flag)) {
      throw new CliError(`Invalid --server-name '${flag}'.`, "Use letters, digits, '-' and '_' only.");
    }
    return flag;
  }
  const derived = (serviceName ?? '')
    .toLowerCase()
    .replace(/[\s.]+/g, '-')
    .replace(/[^a-z0-9_-]/g, '')
    .replace(/-+/g, '-')
    .replace(/^-+|-+$/g, '');
  return derived || FALLBACK_SERVER_NAME;
}

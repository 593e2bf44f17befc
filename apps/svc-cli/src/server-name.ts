import { CliError } from '@app/cli-terminal';

export const SERVER_NAME = /^[A-Za-z0-9_-]+$/;
export const FALLBACK_SERVER_NAME = 'agentos';

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

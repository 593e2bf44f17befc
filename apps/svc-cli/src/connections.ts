import { ClientAdapter } from '@app/client-adapters';
import { Candidate, normalizeBaseUrl } from '@app/svc-client';

/**
 * connect/disconnect exit code: 0 when every result is OK (or there are none), 1 when no result other
 * than manual steps is OK (manual rows cannot soften a total failure), 3 for anything in between.
 */
export function connectExitCode(results: { status: string }[], okStatuses: string[]): number {
  const real = results.filter((result) => result.status !== 'manual');
  const failing = real.filter((result) => !okStatuses.includes(result.status));
  if (failing.length === 0) {
    return 0;
  }
  return failing.length === real.length ? 1 : 3;
}

/** Base URLs of MCP entries already in client configs (for interactive discovery), with the clients naming each. */
export function harvestClientUrls(adapters: ClientAdapter[]): Candidate[] {
  const byUrl = new Map<string, Set<string>>();
  for (const adapter of adapters) {
    for (const entry of adapter.entries()) {
      try {
        const base = normalizeBaseUrl(entry.url.replace(/\/mcp\/?$/, ''), adapter.id);
        byUrl.set(base, (byUrl.get(base) ?? new Set()).add(adapter.id));
      } catch {
        // an entry with an unusable URL names no candidate
      }
    }
  }
  return [...byUrl].map(([url, clients]) => ({ url, source: 'client-config', sourceFile: [...clients].join(', ') }));
}

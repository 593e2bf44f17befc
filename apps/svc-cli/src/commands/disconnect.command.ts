import { Command, Option } from 'nest-commander';

import { Interrupted, Terminal } from '@app/cli-terminal';
import {
  chatAppRemovalSteps,
  clientContext,
  ClientId,
  createAdapters,
  IN_PLACE_CLIENTS,
  isChatApp,
  McpEntry,
  parseClientList,
} from '@app/client-adapters';
import {
  candidateGroups,
  confirmDiscoveredUrl,
  discoverInteractively,
  readCliEnv,
  resolveAdminCredential,
  SERVICE_ACCOUNTS_CREDENTIAL_HINT,
  ServiceAccountsApi,
  ServiceDescriptor,
  urlBelongsTo,
} from '@app/svc-client';

import { connectExitCode, harvestClientUrls } from '../connections';
import { entryKey, Revocation, revokeHeldAccounts } from '../entry-revocations';
import { svcInvocation } from '../invocation';
import { parseClientsOption, ServiceOptions } from '../options';
import { parseServerNameOption, serverNameFor } from '../server-name';
import { announce } from '../service-target';
import { CredentialedCommand } from '../svc-command';

interface DisconnectOptions extends ServiceOptions {
  clients?: string;
  serverName?: string;
  name?: string;
  revoke?: boolean;
}

interface DisconnectResult {
  client: ClientId;
  status: 'removed' | 'not-found' | 'failed' | 'manual';
  error: string | null;
  removed: string[];
  location: string | null;
  instructions?: string[];
}

/**
 * Removes MCP entries, offline by default: without --server-name only entries pointing at the target
 * service go; entries for other servers are never touched. --revoke also revokes the accounts their tokens are.
 */
@Command({ name: 'disconnect', description: 'Remove MCP entries from client configs' })
export class DisconnectCommand extends CredentialedCommand<DisconnectOptions> {
  protected async execute(_params: string[], options: DisconnectOptions, terminal: Terminal): Promise<number> {
    if (options.serverName !== undefined) {
      serverNameFor(options.serverName, null);
    }
    const context = clientContext();
    const adapters = createAdapters(context);
    const selected: ClientId[] =
      options.clients === undefined ? IN_PLACE_CLIENTS.filter((id) => adapters[id].detect()) : parseClientList(options.clients);
    const env = readCliEnv();
    const request = { flagUrl: options.url, env, cwd: context.cwd };

    let descriptor: ServiceDescriptor | null = null;
    if (options.revoke || options.serverName === undefined) {
      try {
        descriptor = await discoverInteractively(request, harvestClientUrls(Object.values(adapters)), terminal);
        announce(descriptor, terminal);
      } catch (error) {
        if (options.revoke || error instanceof Interrupted) {
          throw error;
        }
      }
    }
    // Offline: every URL discovery would have tried is a target.
    const targetUrls = descriptor
      ? [descriptor.url]
      : candidateGroups(request)
          .flat()
          .map((candidate) => candidate.url);
    if (!descriptor && options.serverName === undefined) {
      terminal.note(`No running service answered; removing entries that point at ${targetUrls.join(', ')}.`);
    }

    let revocations: Revocation[] = [];
    let keep = new Map<string, string>();
    let tokenNotes = new Map<string, string>();
    const isTarget = (entry: McpEntry) =>
      options.serverName !== undefined ? entry.name === options.serverName : targetUrls.some((url) => urlBelongsTo(entry.url, url));
    // Each selected client's entries for the target, read once: what --revoke looks at is what goes.
    const going = new Map(
      selected.flatMap((client) => (isChatApp(client) ? [] : [[client, adapters[client].entries().filter(isTarget)] as const])),
    );
    if (options.revoke && descriptor) {
      await confirmDiscoveredUrl(descriptor, Boolean(options.yes), terminal);
      const credential = await resolveAdminCredential(
        descriptor,
        env,
        terminal,
        Boolean(options.allowHttp),
        SERVICE_ACCOUNTS_CREDENTIAL_HINT,
      );
      const api = new ServiceAccountsApi(descriptor.url, credential);
      // Before any entry goes: a credential the service refuses must not leave valid tokens with no local copy.
      const active = await api.listActive();
      // Revoked first: an entry whose token may still work and has no other copy here stays unless it was revoked.
      ({ revocations, keep, tokenNotes } = await revokeHeldAccounts({
        api,
        serviceUrl: descriptor.url,
        active,
        adapters,
        accountName: options.name,
        going,
      }));
    }

    let unremoved = 0;
    const results: DisconnectResult[] = selected.map((client) => {
      if (isChatApp(client)) {
        return { client, status: 'manual', error: null, removed: [], location: null, instructions: chatAppRemovalSteps(client) };
      }
      const adapter = adapters[client];
      const matching = going.get(client) ?? [];
      const removed: string[] = [];
      const locations: string[] = [];
      const said: string[] = [];
      for (const entry of matching) {
        const key = entryKey(client, entry);
        const keptWhy = keep.get(key);
        if (keptWhy !== undefined) {
          said.push(keptWhy);
          continue;
        }
        try {
          // Without --server-name, only the entry that matched by URL: a same-named one elsewhere in the file stays.
          if (adapter.remove(entry.name, entry.location, options.serverName === undefined ? entry.url : undefined)) {
            removed.push(entry.name);
            locations.push(entry.location);
            said.push(tokenNotes.get(key) ?? '');
          }
        } catch (error) {
          // One file refused (a symbolic link): the others' removals still happened and are said.
          unremoved += 1;
          said.push(error instanceof Error ? error.message : String(error));
        }
      }
      // A file that does not parse may hold an entry of this service: never "not-found", and said beside a removal.
      const unreadable = adapter.unreadable();
      const error = [...unreadable, ...said].filter(Boolean).join(' ') || null;
      if (removed.length) {
        return { client, status: 'removed', error, removed: [...new Set(removed)], location: [...new Set(locations)].join(', ') };
      }
      return { client, status: error ? 'failed' : 'not-found', error, removed: [], location: null };
    });

    let exitCode = connectExitCode(results, ['removed', 'not-found', 'manual']);
    // Partial: an account not revoked, or an entry kept or not removable beside others removed.
    if (exitCode === 0 && (keep.size > 0 || unremoved > 0 || revocations.some((revocation) => revocation.status === 'failed'))) {
      exitCode = 3;
    }
    terminal.document({
      os: descriptor,
      server_name: options.serverName ?? null,
      target_urls: options.serverName !== undefined ? [] : targetUrls,
      results,
      revocations,
      exit_code: exitCode,
    });
    this.report(results, revocations, Boolean(options.revoke), terminal);
    return exitCode;
  }

  private report(results: DisconnectResult[], revocations: Revocation[], revoked: boolean, terminal: Terminal): void {
    for (const result of results) {
      const removed = result.status === 'removed' ? ` ${result.removed.join(', ')} from ${result.location}` : '';
      const error = result.error ? `${removed ? ';' : ''} ${result.error}` : '';
      terminal.line(`${result.client}: ${result.status}${removed}${error}`);
      for (const line of result.instructions ?? []) {
        terminal.line(`    ${line}`);
      }
    }
    for (const revocation of revocations) {
      terminal.line(`account ${revocation.account}: ${revocation.status}${revocation.error ? ` (${revocation.error})` : ''}`);
    }
    if (!revoked && results.some((result) => result.status === 'removed')) {
      terminal.note(
        `Tokens of removed entries stay valid until revoked: ${svcInvocation()} tokens revoke <name>, or re-run with --revoke.`,
      );
    }
  }

  @Option({ flags: '--clients <list>', description: 'Comma-separated client identifiers (default: detected)' })
  parseClients(value: string): string {
    return parseClientsOption(value);
  }

  @Option({ flags: '--server-name <name>', description: 'Remove exactly this entry (default: every entry for the target)' })
  parseServerName(value: string): string {
    return parseServerNameOption(value);
  }

  @Option({
    flags: '--name <name>',
    description: 'With --revoke: the shared account name used at connect (default: one account per client)',
  })
  parseName(value: string): string {
    return value;
  }

  @Option({
    flags: '--revoke',
    description: 'Also revoke the matching accounts: those whose tokens the removed entries hold (needs the service and admin credential)',
  })
  parseRevoke(): boolean {
    return true;
  }
}

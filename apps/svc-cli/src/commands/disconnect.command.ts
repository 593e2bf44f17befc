import { Command, Option } from 'nest-commander';

import { Interrupted, Terminal } from '@app/cli-terminal';
import {
  chatAppRemovalSteps,
  clientContext,
  ClientId,
  createAdapters,
  IN_PLACE_CLIENTS,
  InPlaceClientId,
  isChatApp,
  McpEntry,
  parseClientList,
} from '@app/client-adapters';
import {
  candidateGroups,
  confirmDiscoveredUrl,
  discoverInteractively,
  isServiceAccountToken,
  listedTokenPrefix,
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
  /** Entries at a default port kept offline: nothing shows they are this service's. */
  note?: string;
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
    // Offline: every URL discovery would have tried is a target. One the operator named (--url, SERVICE_URL, an env
    // file) is this service's, as is one that answered as it (its /info). A default port, or a URL read from a
    // client's config that answered only a probe, may be any server's: there only an entry holding a
    // service-account token goes, and another server's entry (its own API key with it) is never removed on a guess.
    const candidates = descriptor
      ? [{ url: descriptor.url, source: descriptor.discovered_via === 'info' ? 'found' : descriptor.url_source }]
      : candidateGroups(request).flat();
    const targetUrls = candidates.map((candidate) => candidate.url);
    const isGuess = (source: string) => source === 'default' || source === 'client-config';
    const namedUrls = candidates.filter((candidate) => !isGuess(candidate.source)).map((candidate) => candidate.url);
    const guessedUrls = candidates
      .filter((candidate) => isGuess(candidate.source) && !namedUrls.some((url) => urlBelongsTo(candidate.url, url)))
      .map((candidate) => candidate.url);
    if (!descriptor && options.serverName === undefined) {
      const named = namedUrls.length ? [`entries that point at ${namedUrls.join(', ')}`] : [];
      const guessed = guessedUrls.length ? [`entries at ${guessedUrls.join(', ')} that hold a service-account token`] : [];
      terminal.note(`No running service answered; removing ${[...named, ...guessed].join(', and ')}.`);
    }

    let revocations: Revocation[] = [];
    let keep = new Map<string, string>();
    let tokenNotes = new Map<string, string>();
    const pointsAt = (entry: McpEntry) => targetUrls.find((url) => urlBelongsTo(entry.url, url));
    const isTarget = (entry: McpEntry) => {
      if (options.serverName !== undefined) {
        return entry.name === options.serverName;
      }
      const url = pointsAt(entry);
      return url !== undefined && (!guessedUrls.includes(url) || isServiceAccountToken(entry.token));
    };
    // Each selected client's entries, read once: those for the target (what --revoke looks at is what goes), and
    // those at a guessed address that nothing shows are this service's (kept, and named).
    const going = new Map<InPlaceClientId, McpEntry[]>();
    const unclaimed = new Map<InPlaceClientId, McpEntry[]>();
    for (const client of selected) {
      if (isChatApp(client)) {
        continue;
      }
      const entries = adapters[client].entries();
      going.set(client, entries.filter(isTarget));
      const kept = options.serverName === undefined ? entries.filter((entry) => !isTarget(entry) && pointsAt(entry) !== undefined) : [];
      unclaimed.set(client, kept);
    }
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
    const removedTokens = new Set<string>();
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
            if (isServiceAccountToken(entry.token)) {
              removedTokens.add(listedTokenPrefix(entry.token));
            }
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
      const note = keptUnclaimed(unclaimed.get(client) ?? []);
      const noted = note ? { note } : {};
      if (removed.length) {
        const location = [...new Set(locations)].join(', ');
        return { client, status: 'removed', error, removed: [...new Set(removed)], location, ...noted };
      }
      return { client, status: error ? 'failed' : 'not-found', error, removed: [], location: null, ...noted };
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
    this.report(results, revocations, options.revoke ? [] : [...removedTokens], terminal);
    return exitCode;
  }

  /** `unrevoked`: the listed prefixes of the tokens removed entries held, their accounts left active. */
  private report(results: DisconnectResult[], revocations: Revocation[], unrevoked: string[], terminal: Terminal): void {
    for (const result of results) {
      const removed = result.status === 'removed' ? ` ${result.removed.join(', ')} from ${result.location}` : '';
      const error = result.error ? `${removed ? ';' : ''} ${result.error}` : '';
      terminal.line(`${result.client}: ${result.status}${removed}${error}`);
      for (const line of [...(result.instructions ?? []), ...(result.note ? [result.note] : [])]) {
        terminal.line(`    ${line}`);
      }
    }
    for (const revocation of revocations) {
      terminal.line(`account ${revocation.account}: ${revocation.status}${revocation.error ? ` (${revocation.error})` : ''}`);
    }
    // The entries are gone now, so a later --revoke finds no token: name what to look for in the list instead.
    if (unrevoked.length) {
      const svc = svcInvocation();
      terminal.note(
        `The removed entries' tokens (${unrevoked.map((prefix) => `${prefix}…`).join(', ')}) stay valid until their accounts are revoked: find them by that prefix in ${svc} tokens list, then ${svc} tokens revoke <name>. Next time, disconnect --revoke does both.`,
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

/** What an offline run left at a default port, and how to remove it when it is this service's after all. */
function keptUnclaimed(entries: McpEntry[]): string | undefined {
  if (entries.length === 0) {
    return undefined;
  }
  const names = [...new Set(entries.map((entry) => `${entry.name} (${entry.url})`))];
  const bases = [...new Set(entries.map((entry) => new URL(entry.url).origin))].map((base) => `--url ${base}`);
  const [it, is] = names.length === 1 ? ['it', 'it is'] : ['them', 'they are'];
  return `Kept ${names.join(', ')}: nothing there answered as this service and no service-account token shows ${is} its; ${bases.join(' or ')} removes ${it}.`;
}

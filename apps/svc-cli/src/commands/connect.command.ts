import { relative } from 'node:path';

import { Command, Option } from 'nest-commander';

import { CliError, Interrupted, Terminal } from '@app/cli-terminal';
import {
  CHAT_APP_CLIENTS,
  ChatAppAccess,
  ChatAppClientId,
  chatAppSetupSteps,
  chatAppUnreachableNote,
  ClientAdapter,
  clientContext,
  ClientId,
  clientLabel,
  createAdapters,
  describeClients,
  IN_PLACE_CLIENTS,
  InPlaceClientId,
  isChatApp,
  npxNote,
  parseClientList,
} from '@app/client-adapters';
import {
  Candidate,
  confirmDiscoveredUrl,
  discoverInteractively,
  isCloudReachable,
  isServiceAccountToken,
  isTokenOf,
  listedTokenPrefix,
  mcpUrlOf,
  McpVerification,
  MintedServiceAccount,
  MintRequest,
  NameConflictError,
  NOT_VERIFIED,
  oauthEnabled,
  readCliEnv,
  refusePlaintextCredential,
  resolveAdminCredential,
  sameUrl,
  SERVICE_ACCOUNTS_CREDENTIAL_HINT,
  ServiceAccount,
  ServiceAccountsApi,
  ServiceDescriptor,
  verifyMcp,
} from '@app/svc-client';

import { connectExitCode, harvestClientUrls } from '../connections';
import { DEFAULT_GRACE_SECONDS, formatDuration } from '../durations';
import { gitExposure } from '../git-exposure';
import { svcInvocation } from '../invocation';
import { collectScopes, InvalidOptionValue, MintOptions, parseClientsOption, serviceAccountNameProblem } from '../options';
import { parseExpires, requirePrivilegedFlag } from '../scopes';
import { parseServerNameOption, serverNameFor } from '../server-name';
import { announce } from '../service-target';
import { MintingCommand } from '../svc-command';

interface ConnectOptions extends MintOptions {
  clients?: string;
  name?: string;
  pat?: boolean;
  serverName?: string;
  project?: boolean;
  allowCommitted?: boolean;
  rotate?: boolean;
  skipExisting?: boolean;
}

export interface ConnectResult {
  client: ClientId;
  status: 'connected' | 'already-connected' | 'needs-login' | 'skipped' | 'failed' | 'manual';
  error: string | null;
  location?: string;
  account?: ServiceAccount | null;
  verify?: McpVerification;
  url?: string;
  instructions?: string[];
  note?: string;
  rotated?: boolean;
  replaced_url?: string;
  replaced_token_entry?: boolean;
  auto?: boolean;
}

/** A service account and its token (after a rotation, the account as it was, to find its old token), or why a client gets none. */
type TokenOutcome =
  | { account: MintedServiceAccount; rotated: boolean; previous?: ServiceAccount; note?: string }
  | { status: 'skipped' | 'failed'; error: string };

const UNAUTHENTICATED_MCP_WARNING =
  'This service accepts unauthenticated MCP requests although it enforces authentication elsewhere: anyone who can reach /mcp can use its tools. Tokens were still minted and configured; upgrade or reconfigure the service to require them on /mcp.';

/** The documented field order: client, status, error, then where and what, then the optional extras. */
const RESULT_ORDER = ['client', 'status', 'error', 'location', 'account', 'verify', 'url', 'instructions'];

function inDocumentedOrder(result: ConnectResult): ConnectResult {
  const entries = Object.entries(result).sort(([a], [b]) => rank(a) - rank(b));
  return Object.fromEntries(entries) as unknown as ConnectResult;
}

function rank(key: string): number {
  const index = RESULT_ORDER.indexOf(key);
  return index < 0 ? RESULT_ORDER.length : index;
}

function publicAccount(account: MintedServiceAccount | ServiceAccount): ServiceAccount {
  const { token: _token, ...rest } = account as MintedServiceAccount;
  return rest;
}

/** How a chat app, which cannot send a bearer token, gets in to this service's /mcp. */
function chatAppAccess(descriptor: ServiceDescriptor): ChatAppAccess {
  return oauthEnabled(descriptor) ? 'oauth' : descriptor.auth_mode === 'none' ? 'open' : 'token';
}

/** One `svc connect` run: the service, how entries are written, and the accounts minted on the way. */
class Connection {
  readonly mcpUrl: string;
  readonly oauthMode: boolean;
  private api: ServiceAccountsApi | null = null;
  private shared: TokenOutcome | null = null;

  constructor(
    readonly descriptor: ServiceDescriptor,
    readonly serverName: string,
    private readonly options: ConnectOptions,
    private readonly terminal: Terminal,
  ) {
    this.mcpUrl = mcpUrlOf(descriptor.url, descriptor.mcp.path);
    this.oauthMode = oauthEnabled(descriptor) && !options.pat;
  }

  /** --scopes or --expires given: they shape a token minted now, never one kept, shared or rotated (which is said). */
  private get shapesNewToken(): boolean {
    return this.options.scopes !== undefined || this.options.expires !== undefined;
  }

  /** Entries carry minted tokens unless /mcp signs in with OAuth or the service has no auth at all. */
  get minting(): boolean {
    return !this.oauthMode && (this.descriptor.auth_mode !== 'none' || Boolean(this.options.pat));
  }

  async prepareMinting(): Promise<void> {
    refusePlaintextCredential(this.descriptor.url, Boolean(this.options.allowHttp), 'the admin credential and minted tokens');
    const credential = await resolveAdminCredential(
      this.descriptor,
      readCliEnv(),
      this.terminal,
      Boolean(this.options.allowHttp),
      SERVICE_ACCOUNTS_CREDENTIAL_HINT,
    );
    this.api = new ServiceAccountsApi(this.descriptor.url, credential);
  }

  async connect(adapter: ClientAdapter, sharedCandidates: ClientAdapter[]): Promise<ConnectResult> {
    const location = adapter.location(Boolean(this.options.project));
    // Every result but a manual one carries the verification object, checked or not (a script reads verify.ok).
    const base = { client: adapter.id, location, account: null, verify: NOT_VERIFIED } as const;
    if (this.options.project && !adapter.projectScope) {
      // Its only config is the user's: writing a token there was not what --project asked for.
      return {
        ...base,
        status: 'skipped',
        error: `${adapter.id} has no project-scoped config; run svc connect --clients ${adapter.id} without --project to connect it for this user.`,
      };
    }
    try {
      // A --project run looks at the project scope only (a user entry must not make it already connected);
      // otherwise the entry the client itself resolves, whichever scope holds it.
      const existing = this.options.project ? adapter.entryIn(this.serverName, true) : adapter.resolve(this.serverName);
      let replacedUrl: string | undefined;
      // Why the entry is being replaced, when its token failed: a refusal to replace it says so.
      let stale: string | undefined;
      if (existing && sameUrl(existing.url, this.mcpUrl) && !this.options.rotate && (!this.minting || existing.token)) {
        if (existing.token) {
          refusePlaintextCredential(this.descriptor.url, Boolean(this.options.allowHttp), 'a stored token');
        }
        const verify = await this.verify(adapter, existing.token);
        if (verify.ok || (this.oauthMode && !existing.token && verify.oauth_challenge)) {
          const named = this.minting && this.api ? await this.api.findActive(this.accountName(adapter)) : null;
          const account = named && existing.token && isTokenOf(named, existing.token) ? named : null;
          const unused = this.minting && this.shapesNewToken;
          return {
            ...base,
            status: 'already-connected',
            error: null,
            location: existing.location,
            account,
            verify,
            // Said, not silently dropped: the flags shape a token that is minted, and none was.
            ...(unused ? { note: 'Kept its token: --scopes and --expires apply to a new account (revoke it, or --name another).' } : {}),
          };
        }
        const refused = existing.token !== null && (verify.status_code === 401 || verify.status_code === 403);
        stale = `${refused ? "The entry's token no longer works" : 'The entry no longer verifies'} (${verifyFailure(verify)}).`;
        if (this.options.skipExisting) {
          return { ...base, status: 'skipped', error: `${stale} Re-run without --skip-existing to replace it.` };
        }
      } else if (existing && !sameUrl(existing.url, this.mcpUrl)) {
        if (this.options.skipExisting) {
          return { ...base, status: 'skipped', error: `Existing entry points at ${existing.url}; left untouched.` };
        }
        replacedUrl = existing.url;
      } else if (existing && this.options.skipExisting) {
        // This service's entry without a token (written while it had no auth, or by hand): minting would rewrite it.
        return {
          ...base,
          status: 'skipped',
          error: 'Existing entry has no token; left untouched. Re-run without --skip-existing to mint one.',
        };
      }

      let account: MintedServiceAccount | null = null;
      let rotated = false;
      let previous: ServiceAccount | undefined;
      let accountNote: string | undefined;
      if (this.minting) {
        // Before any token exists: a config that cannot take the entry must not cost the account its token.
        adapter.check(this.serverName, this.mcpUrl, Boolean(this.options.project));
        const exposed = this.options.project && !this.options.allowCommitted ? gitExposure(location) : null;
        if (exposed) {
          return { ...base, status: 'failed', error: committedTokenRefusal(location, exposed) };
        }
        const outcome = this.options.name ? await this.sharedAccount(sharedCandidates) : await this.mintFor(this.accountName(adapter));
        if ('status' in outcome) {
          return { ...base, status: outcome.status, error: stale ? `${stale} ${outcome.error}` : outcome.error };
        }
        account = outcome.account;
        rotated = outcome.rotated;
        previous = outcome.previous;
        accountNote = outcome.note;
      }
      const token = account?.token ?? null;
      const written = adapter.write(this.serverName, this.mcpUrl, token, Boolean(this.options.project));
      // Before the read-back: an entry of another scope that holds the old token and shadows this one gets the new token too.
      const alsoUpdated = previous && token ? this.replaceOldToken(adapter, previous, token) : [];
      const readBack = adapter.resolve(this.serverName);
      if (!readBack || readBack.url !== this.mcpUrl || readBack.token !== token) {
        const found = readBack ? `${readBack.location} -> ${readBack.url}` : 'nothing';
        return {
          ...base,
          status: 'failed',
          account: account && publicAccount(account),
          error: `The config write did not take effect for '${this.serverName}' (found: ${found}). Another entry may shadow it; remove the stale entry and re-run.`,
        };
      }
      const verify = await this.verify(adapter, token);
      const notes = [
        accountNote,
        written.note,
        // An OAuth entry now: nothing here holds the token it replaces, which still works until its account is revoked.
        this.oauthMode && existing?.token && !token ? replacedTokenNote(existing.token) : null,
        alsoUpdated.length ? `The new token also replaced the old one in: ${alsoUpdated.join(', ')}.` : null,
        adapter.id === 'desktop-app-a' ? npxNote(clientContext()) : null,
      ].filter(Boolean);
      const extras = {
        ...(notes.length ? { note: notes.join(' ') } : {}),
        ...(rotated || (existing?.token && token && existing.token !== token) ? { rotated: true } : {}),
        ...(replacedUrl ? { replaced_url: replacedUrl } : {}),
        ...(this.oauthMode && existing?.token ? { replaced_token_entry: true } : {}),
      };
      const result = { ...base, location: written.location, account: account && publicAccount(account), verify, ...extras };
      if (verify.ok) {
        return { ...result, status: 'connected', error: null };
      }
      if (this.oauthMode && verify.oauth_challenge) {
        return { ...result, status: 'needs-login', error: null, instructions: adapter.loginInstructions(this.serverName) };
      }
      // The entry is written and stays (a passing outage should not cost the token): say so, and how it goes.
      return {
        ...result,
        status: 'failed',
        error:
          `MCP verification failed: ${verifyFailure(verify)}. The entry '${this.serverName}' stays in ` +
          `${written.location}; re-run once the service answers, or remove it with svc disconnect --clients ${adapter.id}.`,
      };
    } catch (error) {
      if (error instanceof Interrupted) {
        throw error;
      }
      // A result has one error string: what to do next goes with it.
      const hint = error instanceof CliError && error.hint ? ` ${error.hint}` : '';
      return { ...base, status: 'failed', error: `${error instanceof Error ? error.message : String(error)}${hint}` };
    }
  }

  manual(client: ChatAppClientId, auto: boolean): ConnectResult {
    const reachable = isCloudReachable(this.mcpUrl);
    return {
      client,
      status: 'manual',
      error: null,
      url: this.mcpUrl,
      instructions: chatAppSetupSteps(client, chatAppAccess(this.descriptor), reachable),
      ...(reachable ? {} : { note: chatAppUnreachableNote(client, this.mcpUrl) }),
      ...(auto ? { auto: true } : {}),
    };
  }

  /** Verifies an unauthenticated handshake fails where auth is enforced; the warning when it does not. */
  async unauthenticatedMcpWarning(): Promise<string | null> {
    if (this.descriptor.auth_mode === 'none' || this.oauthMode) {
      return null;
    }
    const anonymous = await verifyMcp(this.mcpUrl, null);
    return anonymous.ok ? UNAUTHENTICATED_MCP_WARNING : null;
  }

  /**
   * After a rotation, the client's other entries holding the old token (another --server-name, another
   * scope) get the new one: they would stop working when the grace ends. One that cannot be rewritten
   * is named in a warning. Returns the entries rewritten.
   */
  private replaceOldToken(adapter: ClientAdapter, previous: ServiceAccount, token: string): string[] {
    // Entries of this service only, holding a token of the rotated account: a prefix too short to tell tokens apart matches none.
    const holders = adapter
      .entries()
      .filter(
        (entry) =>
          sameUrl(entry.url, this.mcpUrl) &&
          entry.token &&
          entry.token !== token &&
          previous.token_prefix.length >= MIN_TOKEN_PREFIX &&
          isTokenOf(previous, entry.token),
      );
    const replaced: string[] = [];
    for (const entry of holders) {
      const where = `${entry.name} (${entry.location})`;
      try {
        adapter.replaceToken(entry, token);
        replaced.push(where);
      } catch (error) {
        this.terminal.warn(
          `${where} still holds the old token of '${previous.name}', which stops working in ${formatDuration(DEFAULT_GRACE_SECONDS)}: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    return replaced;
  }

  private accountName(adapter: ClientAdapter): string {
    return this.options.name ?? adapter.id;
  }

  private async verify(adapter: ClientAdapter, token: string | null): Promise<McpVerification> {
    const progress = this.terminal.progress(`Verifying ${clientLabel(adapter.id)} over MCP`);
    const verify = await verifyMcp(this.mcpUrl, token);
    if (verify.ok) {
      progress.succeed(`Verified ${clientLabel(adapter.id)}: ${verify.tools} tools`);
    } else {
      progress.fail(
        `${clientLabel(adapter.id)}: ${verify.oauth_challenge ? 'sign-in pending' : `verification failed (${verifyFailure(verify)})`}`,
      );
    }
    return verify;
  }

  /** --name: one account for every client, minted once (a verified token already stored is reused). */
  private async sharedAccount(candidates: ClientAdapter[]): Promise<TokenOutcome> {
    if (!this.shared) {
      for (const adapter of candidates) {
        const entry = adapter.resolve(this.serverName);
        if (!this.options.rotate && entry?.token && sameUrl(entry.url, this.mcpUrl) && (await verifyMcp(this.mcpUrl, entry.token)).ok) {
          const account = await this.api!.findActive(this.options.name!);
          // A verifying token is not necessarily this account's: a project's checked-in .mcp.json may hold anyone's.
          if (account && isTokenOf(account, entry.token)) {
            // Another client gets this token as it is: a privileged one only as deliberately as one minted.
            requirePrivilegedFlag(account.scopes, this.options.privileged);
            const kept = this.shapesNewToken;
            this.shared = {
              account: { ...account, token: entry.token },
              rotated: false,
              ...(kept
                ? {
                    note: `Shares '${account.name}' as it is (${account.scopes.join(', ')}): --scopes and --expires apply to a new account (revoke it, or --name another).`,
                  }
                : {}),
            };
            return this.shared;
          }
        }
      }
      this.shared = await this.mintFor(this.options.name!);
    }
    return this.shared;
  }

  private async mintFor(name: string): Promise<TokenOutcome> {
    const api = this.api!;
    const request: MintRequest = {
      name,
      scopes: this.options.scopes,
      expiresInDays: this.options.expires === undefined ? undefined : parseExpires(this.options.expires),
      privileged: this.options.privileged,
    };
    const progress = this.terminal.progress(`Minting service account '${name}'`);
    try {
      const account = await api.mint(request);
      progress.succeed(`Minted service account '${name}'`);
      return { account, rotated: false };
    } catch (error) {
      if (!(error instanceof NameConflictError)) {
        progress.fail();
        throw error;
      }
      progress.inform(`Service account '${name}' already exists`);
    }
    if (this.options.skipExisting) {
      return { status: 'skipped', error: 'Service account exists; kept untouched.' };
    }
    const found = await api.findActiveMinted(name);
    const foreign = found && (await this.foreignAccount(name, found.mintedBy));
    if (foreign) {
      return foreign;
    }
    const grace = formatDuration(DEFAULT_GRACE_SECONDS);
    let rotate = Boolean(this.options.rotate);
    const asked = !rotate && this.terminal.interactive;
    if (asked) {
      rotate = await this.terminal.confirm(
        `Rotate the token of '${name}'? Its old token keeps working for ${grace}, then stops: a client elsewhere using it (another machine, another config) must connect again.`,
        false,
      );
      if (!rotate) {
        return { status: 'skipped', error: 'Service account exists; kept untouched. Re-run with --rotate, or --name another account.' };
      }
    }
    if (!rotate) {
      return {
        status: 'failed',
        error: `A service account named '${name}' already exists. Re-run with --rotate to rotate its token, or --skip-existing to leave it untouched.`,
      };
    }
    // A prompt may have waited long enough for the account to be revoked meanwhile: it is read again then.
    return this.rotateExisting(name, request, asked ? await api.findActive(name) : (found?.account ?? null));
  }

  /**
   * An existing account another principal minted, refused before anything is asked: anyone may mint an unused
   * name, such as the client ids connect uses by default, and the minter keeps the right to rotate the account,
   * and so to take over the identity this client would run as. Null when the account is the caller's to rotate.
   */
  private async foreignAccount(name: string, mintedBy: string | null): Promise<TokenOutcome | null> {
    const owner = await this.api!.otherOwner(mintedBy);
    return owner === null
      ? null
      : {
          status: 'failed',
          error: `Service account '${name}' was minted by ${owner}, which can rotate or revoke it at any time: connect will not give this client an identity another principal controls. Connect it under a name of your own (--name <name>).`,
        };
  }

  /**
   * The account keeps its id, scopes and expiry and gets a new token; the old one keeps working for the
   * grace, so a client still holding it (or another client sharing the account) is not cut off mid-session.
   */
  private async rotateExisting(name: string, request: MintRequest, active: ServiceAccount | null): Promise<TokenOutcome> {
    const api = this.api!;
    if (!active) {
      // Revoked since the name was refused: it is free again.
      return { account: await api.mint(request), rotated: true };
    }
    // The client gets the account's token as it is: a privileged one only as deliberately as one minted.
    requirePrivilegedFlag(active.scopes, this.options.privileged);
    const kept = this.shapesNewToken ? ` Rotation keeps its scopes and expiry; --scopes and --expires apply to new accounts only.` : '';
    const account = await api.rotate(active, DEFAULT_GRACE_SECONDS);
    // In the result too, where --json shows it: a rotation for a leaked token should not pass for an instant cut-off.
    const note = `Rotated '${name}': the old token keeps working for ${formatDuration(DEFAULT_GRACE_SECONDS)}, then stops.${kept}`;
    this.terminal.note(note);
    return { account, rotated: true, previous: active, note };
  }
}

@Command({ name: 'connect', description: 'Connect coding tools to the service over MCP' })
export class ConnectCommand extends MintingCommand<ConnectOptions> {
  protected async execute(_params: string[], options: ConnectOptions, terminal: Terminal): Promise<number> {
    if (options.expires !== undefined) {
      parseExpires(options.expires);
    }
    if (options.serverName !== undefined) {
      serverNameFor(options.serverName, null);
    }
    requirePrivilegedFlag(options.scopes ?? [], options.privileged);
    const explicitClients = options.clients === undefined ? null : parseClientList(options.clients);
    const context = clientContext();
    const adapters = createAdapters(context);
    const env = readCliEnv();
    const fromConfigs: Candidate[] = harvestClientUrls(Object.values(adapters));
    const descriptor = await discoverInteractively({ flagUrl: options.url, env, cwd: context.cwd }, fromConfigs, terminal);
    await confirmDiscoveredUrl(descriptor, Boolean(options.yes), terminal);
    announce(descriptor, terminal);
    if (!descriptor.mcp.enabled) {
      throw new CliError(
        `MCP is not enabled on the service at ${descriptor.url}.`,
        'Start the service with MCP_ENABLED=true, then re-run svc connect.',
      );
    }
    const connection = new Connection(descriptor, serverNameFor(options.serverName, descriptor.name), options, terminal);
    if (connection.oauthMode && (options.name || options.scopes || options.expires || options.privileged)) {
      throw new CliError(
        '/mcp on this service signs in with OAuth: --name, --scopes, --expires and --privileged apply to minted tokens only.',
        'Add --pat to mint tokens anyway.',
      );
    }

    let selected: ClientId[];
    const autoChatApps: ChatAppClientId[] = [];
    if (explicitClients) {
      selected = explicitClients;
    } else {
      selected = IN_PLACE_CLIENTS.filter((id) => adapters[id].detect());
      // A service on a public URL can be added to chat apps too: their steps come along, in every auth mode.
      if (isCloudReachable(connection.mcpUrl)) {
        autoChatApps.push(...CHAT_APP_CLIENTS);
      }
      if (selected.length === 0 && autoChatApps.length === 0) {
        throw new CliError('No supported clients detected on this machine.', `Pass --clients with any of: ${describeClients()}.`);
      }
    }
    const inPlace = selected.filter((id): id is InPlaceClientId => !isChatApp(id)).map((id) => adapters[id]);
    if (inPlace.length && connection.minting) {
      await connection.prepareMinting();
    } else if (inPlace.length && descriptor.auth_mode === 'none' && !connection.oauthMode) {
      terminal.note('Authorization is disabled on this service; connecting without credentials.');
    }
    const warning = inPlace.length ? await connection.unauthenticatedMcpWarning() : null;

    const results: ConnectResult[] = [];
    try {
      for (const client of selected) {
        results.push(
          inDocumentedOrder(isChatApp(client) ? connection.manual(client, false) : await connection.connect(adapters[client], inPlace)),
        );
      }
    } catch (error) {
      if (error instanceof Interrupted && results.length > 0) {
        // What the clients before the interrupt got stays theirs: say what it was.
        this.report(results, warning, connection, terminal);
        throw new Interrupted('Aborted; nothing further was changed.');
      }
      throw error;
    }
    results.push(...autoChatApps.map((client) => inDocumentedOrder(connection.manual(client, true))));
    const exitCode = connectExitCode(results, ['connected', 'already-connected', 'needs-login', 'manual']);
    terminal.document({ os: descriptor, server_name: connection.serverName, results, warning, exit_code: exitCode });
    this.report(results, warning, connection, terminal);
    return exitCode;
  }

  private report(results: ConnectResult[], warning: string | null, connection: Connection, terminal: Terminal): void {
    const { color } = terminal;
    terminal.line(`MCP server '${connection.serverName}' at ${connection.mcpUrl}`);
    for (const result of results) {
      const mark = ['connected', 'already-connected', 'needs-login', 'manual'].includes(result.status) ? color.green('✓') : color.red('✗');
      terminal.line(
        `${mark} ${clientLabel(result.client)}: ${result.status}${result.location ? ` (${result.location})` : ''}${result.verify?.ok ? `, ${result.verify.tools} tools` : ''}`,
      );
      for (const line of [result.error, result.note, ...(result.instructions ?? []), result.url ? `MCP URL: ${result.url}` : null]) {
        if (line) {
          terminal.line(`    ${line}`);
        }
      }
    }
    if (results.some((result) => result.status === 'connected')) {
      terminal.line('Restart the connected apps to load the new entry.');
      terminal.line(
        'In a connected app, the get_config tool shows what its token may do: its scopes and the agents, teams and workflows it can run.',
      );
    }
    const accounts = [...new Set(results.map((result) => result.account?.name).filter(Boolean))];
    if (accounts.length) {
      terminal.line('Revoke a token any time with:');
      for (const account of accounts) {
        terminal.line(`  ${svcInvocation()} tokens revoke ${account} --url ${connection.descriptor.url}`);
      }
    }
    if (warning) {
      terminal.warn(warning);
    }
  }

  @Option({ flags: '--clients <list>', description: 'Comma-separated client identifiers (default: detected)' })
  parseClients(value: string): string {
    return parseClientsOption(value);
  }

  @Option({ flags: '--name <name>', description: 'One shared service account with this name (default: one per client)' })
  parseName(value: string): string {
    const problem = serviceAccountNameProblem(value);
    if (problem) {
      throw new InvalidOptionValue(problem);
    }
    return value;
  }

  @Option({
    flags: '-s, --scopes <scope>',
    description:
      "Scope to grant (repeatable, or comma-separated; default: the server's run and read scopes, which run every component and read its own sessions and config; add agents:read to list agents)",
  })
  override parseScopes(value: string, previous?: string[]): string[] {
    return collectScopes(value, previous);
  }

  @Option({ flags: '--pat', description: 'Mint tokens even when /mcp is OAuth-protected' })
  parsePat(): boolean {
    return true;
  }

  @Option({ flags: '--server-name <name>', description: "Entry name (default: derived from the service name, fallback 'agentos')" })
  parseServerName(value: string): string {
    return parseServerNameOption(value);
  }

  @Option({ flags: '--project', description: 'Write project-scoped configs instead of user-level ones' })
  parseProject(): boolean {
    return true;
  }

  @Option({
    flags: '--allow-committed',
    description: 'With --project: write a token even into a config file that git tracks or does not ignore',
  })
  parseAllowCommitted(): boolean {
    return true;
  }

  @Option({
    flags: '--rotate',
    description: 'Rewrite existing entries without asking (rotate the token; the old one keeps working for 1h)',
  })
  parseRotate(): boolean {
    return true;
  }

  @Option({ flags: '--skip-existing', description: 'Never touch existing accounts or entries' })
  parseSkipExisting(): boolean {
    return true;
  }
}

/** Why a token is not written into a project file git would share, and the ways on. */
function committedTokenRefusal(location: string, exposure: 'tracked' | 'unignored'): string {
  const file = relative(process.cwd(), location);
  return exposure === 'tracked'
    ? `${location} is tracked by git: a token written there would be committed. Untrack it (git rm --cached ${file}) and add it to .gitignore, or pass --allow-committed to write it anyway.`
    : `${location} is not ignored by git: the next commit could carry a token written there. Add ${file} to .gitignore, or pass --allow-committed to write it anyway.`;
}

/** The token an OAuth entry replaced: it still works, and its account is named by the prefix svc tokens list shows. */
function replacedTokenNote(token: string): string {
  if (!isServiceAccountToken(token)) {
    // The security key, a user's JWT: no account lists it, and any part of it shown is a part of a secret given away.
    return 'The credential the entry held (not a service-account token) was removed from it; it still works wherever else it is used.';
  }
  return `The token the entry held still works until its account is revoked: find it by its prefix ${listedTokenPrefix(token)} in svc tokens list, and revoke it with svc tokens revoke <name> unless another client uses it.`;
}

/** Why an MCP verification failed, in a few words: the service's answer, else what stopped the request. */
function verifyFailure(verify: McpVerification): string {
  return verify.error ?? `HTTP ${verify.status_code}`;
}

/** `svc_pat_` and at least four characters of the token itself (the service shows seven). */
const MIN_TOKEN_PREFIX = 12;

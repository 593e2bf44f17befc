import { Command, Option, SubCommand } from 'nest-commander';

import { CliError, sanitize, Terminal } from '@app/cli-terminal';
import {
  NameConflictError,
  readCliEnv,
  refusePlaintextCredential,
  resolveAdminCredential,
  SERVICE_ACCOUNTS_CREDENTIAL_HINT,
  ServiceAccount,
  ServiceAccountsApi,
  ServiceDescriptor,
} from '@app/svc-client';

import { DEFAULT_GRACE_SECONDS, formatDuration, parseGrace } from '../durations';
import { svcInvocation } from '../invocation';
import { MintOptions, serviceAccountNameProblem, ServiceOptions } from '../options';
import { parseExpires, requirePrivilegedFlag } from '../scopes';
import { targetService } from '../service-target';
import { CommandGroup, CredentialedCommand, MintingCommand } from '../svc-command';
import { formatSeconds, formatTime, printTable as printColumns } from '../table';
import { UsageError } from '../usage-errors';

interface RotateOptions extends ServiceOptions {
  grace?: number;
}

/** `svc tokens list` marks active accounts whose expiry is this close. */
const EXPIRES_SOON_SECONDS = 14 * 86_400;

/** The service-accounts API with the admin credential (resolving it applies the plaintext-HTTP gate). */
async function accountsApi(descriptor: ServiceDescriptor, options: ServiceOptions, terminal: Terminal): Promise<ServiceAccountsApi> {
  return new ServiceAccountsApi(
    descriptor.url,
    await resolveAdminCredential(descriptor, readCliEnv(), terminal, Boolean(options.allowHttp), SERVICE_ACCOUNTS_CREDENTIAL_HINT),
  );
}

@SubCommand({ name: 'create', arguments: '<name>', description: 'Mint a service-account token (shown once)' })
export class TokensCreateCommand extends MintingCommand<MintOptions> {
  protected async execute([name]: string[], options: MintOptions, terminal: Terminal): Promise<number> {
    const problem = serviceAccountNameProblem(name);
    if (problem) {
      throw new UsageError(problem);
    }
    const expiresInDays = parseExpires(options.expires ?? '90d');
    requirePrivilegedFlag(options.scopes ?? [], options.privileged);
    const descriptor = await targetService(options, readCliEnv(), terminal);
    // The new token travels back over this connection even on an instance without auth.
    refusePlaintextCredential(descriptor.url, Boolean(options.allowHttp), 'the admin credential and the new token');
    const api = await accountsApi(descriptor, options, terminal);
    const progress = terminal.progress(`Minting service account '${name}'`);
    let account;
    try {
      account = await api.mint({ name, scopes: options.scopes, expiresInDays, privileged: options.privileged });
    } catch (error) {
      progress.fail();
      if (error instanceof NameConflictError) {
        throw new CliError(
          error.message,
          `Rotate its token (${svcInvocation()} tokens rotate ${name}), revoke it first (${svcInvocation()} tokens revoke ${name}), or pick a different name.`,
        );
      }
      throw error;
    }
    progress.succeed(`Minted service account '${name}'`);
    terminal.document(account);
    terminal.line(`Principal: ${account.principal}`);
    terminal.line(`Scopes:    ${account.scopes.join(', ')}`);
    terminal.line(`Expires:   ${account.expires_at === null ? 'never' : formatTime(account.expires_at)}`);
    terminal.line('');
    terminal.line(terminal.color.bold('Token (shown once; store it now):'));
    terminal.line(account.token);
    return 0;
  }
}

@SubCommand({ name: 'list', description: 'List service accounts, including revoked ones' })
export class TokensListCommand extends CredentialedCommand<ServiceOptions> {
  protected async execute(_params: string[], options: ServiceOptions, terminal: Terminal): Promise<number> {
    const descriptor = await targetService(options, readCliEnv(), terminal);
    const api = await accountsApi(descriptor, options, terminal);
    const now = Math.floor(Date.now() / 1000);
    const accounts = (await api.list()).map((account) => ({ ...account, expires_soon: expiresSoon(account, now) }));
    terminal.document({ service_accounts: accounts });
    if (!terminal.json) {
      printTable(accounts, terminal);
    }
    return 0;
  }
}

/** Active and not yet expired, but within 14 days of it: time to rotate or re-mint. */
function expiresSoon(account: ServiceAccount, now: number): boolean {
  return (
    account.revoked_at === null &&
    account.expires_at !== null &&
    account.expires_at > now &&
    account.expires_at - now <= EXPIRES_SOON_SECONDS
  );
}

function status(account: ServiceAccount & { expires_soon: boolean }): string {
  if (account.revoked_at !== null) {
    return 'revoked';
  }
  if (account.expires_at !== null && account.expires_at <= Date.now() / 1000) {
    return 'expired';
  }
  return account.expires_soon ? 'expires soon' : 'active';
}

function printTable(accounts: (ServiceAccount & { expires_soon: boolean })[], terminal: Terminal): void {
  if (accounts.length === 0) {
    terminal.line('No service accounts.');
    return;
  }
  const rows = accounts.map((account) => [
    sanitize(account.name),
    `${account.token_prefix}…`,
    account.scopes.join(','),
    account.expires_at === null ? 'never' : formatTime(account.expires_at),
    formatTime(account.last_used_at),
    status(account),
  ]);
  printColumns(['Name', 'Token', 'Scopes', 'Expires', 'Last used', 'Status'], rows, terminal);
}

@SubCommand({ name: 'revoke', arguments: '<name>', description: 'Revoke a service account (irreversible)' })
export class TokensRevokeCommand extends CredentialedCommand<ServiceOptions> {
  protected async execute([name]: string[], options: ServiceOptions, terminal: Terminal): Promise<number> {
    const descriptor = await targetService(options, readCliEnv(), terminal);
    const api = await accountsApi(descriptor, options, terminal);
    const account = await api.findActive(name);
    if (!account) {
      // Revoking is idempotent: an account revoked before is the state asked for, said as such.
      const accounts = await api.list();
      const earlier = accounts.filter((candidate) => candidate.name === name && candidate.revoked_at !== null).at(-1);
      if (!earlier) {
        throw await api.missing(name, accounts);
      }
      terminal.document({ revoked: earlier });
      terminal.line(`Service account '${name}' was already revoked (at ${formatSeconds(earlier.revoked_at)}); nothing to do.`);
      return 0;
    }
    if (terminal.interactive && !options.yes) {
      const confirmed = await terminal.confirm(`Revoke service account '${name}'? Its tokens stop working on their next request.`, false);
      if (!confirmed) {
        terminal.line('Aborted; no changes made.');
        return 0;
      }
    }
    const revoked = await api.revoke(account);
    terminal.document({ revoked });
    terminal.line(`Revoked service account '${name}' (${revoked.principal}).`);
    return 0;
  }

  @Option({ flags: '-y, --yes', description: 'Skip the confirmation; trust a remote SERVICE_URL from a .env file' })
  override parseYes(): boolean {
    return true;
  }
}

@SubCommand({
  name: 'rotate',
  arguments: '<name>',
  description: 'Give a service account a new token (shown once); the old one keeps working for the grace period',
})
export class TokensRotateCommand extends CredentialedCommand<RotateOptions> {
  protected async execute([name]: string[], options: RotateOptions, terminal: Terminal): Promise<number> {
    const grace = options.grace ?? DEFAULT_GRACE_SECONDS;
    const descriptor = await targetService(options, readCliEnv(), terminal);
    // The new token travels back over this connection even on an instance without auth.
    refusePlaintextCredential(descriptor.url, Boolean(options.allowHttp), 'the admin credential and the new token');
    const api = await accountsApi(descriptor, options, terminal);
    const found = await api.findActiveMinted(name);
    if (!found) {
      throw await api.missing(name);
    }
    const { account } = found;
    const owner = await api.otherOwner(found.mintedBy);
    if (owner !== null) {
      terminal.warn(`'${name}' was minted by ${owner}, which can rotate or revoke it again at any time.`);
    }
    const progress = terminal.progress(`Rotating service account '${name}'`);
    let rotated;
    try {
      rotated = await api.rotate(account, grace);
    } catch (error) {
      progress.fail();
      throw error;
    }
    progress.succeed(`Rotated service account '${name}'`);
    terminal.document(rotated);
    const previous = `The previous token (${sanitize(account.token_prefix)}…)`;
    terminal.line(
      grace === 0
        ? `${previous} has stopped working.`
        : `${previous} keeps working for ${formatDuration(grace)}, until ${formatTime(Math.floor(Date.now() / 1000) + grace)}, unless this account is rotated again before then: that ends it at once.`,
    );
    terminal.line('');
    terminal.line(terminal.color.bold('New token (shown once; store it now):'));
    terminal.line(rotated.token);
    return 0;
  }

  @Option({
    flags: '--grace <duration>',
    description: "How long the old token keeps working: '30s', '15m', '1h', '1d' or seconds, at most 1d (default 1h)",
  })
  parseGrace(value: string): number {
    return parseGrace(value);
  }
}

@Command({
  name: 'tokens',
  description: 'Manage service-account tokens',
  subCommands: [TokensCreateCommand, TokensListCommand, TokensRevokeCommand, TokensRotateCommand],
})
export class TokensCommand extends CommandGroup {}

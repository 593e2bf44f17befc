import { CliError } from '@app/cli-terminal';
import { SCOPE_SYNTAX } from '@app/scopes';

import { AdminApi } from './admin-api';
import { AdminCredential } from './cli-env';
import { Answer, errorDetail, Schemas, serviceClient } from './http';

/** A service account as the CLI prints it: never the hash, and the token only when it was just minted or rotated. */
export type ServiceAccount = Omit<Schemas['ServiceAccountDto'], 'created_by'>;

export type MintedServiceAccount = ServiceAccount & Pick<Schemas['CreatedServiceAccountDto'], 'token'>;

export interface MintRequest {
  name: string;
  scopes?: string[];
  /** Days until expiry, or null for a token that never expires; absent means the server default. */
  expiresInDays?: number | null;
  privileged?: boolean;
}

/** An active account of that name exists (409). */
export class NameConflictError extends CliError {}

function scopeString(scope: unknown): string {
  if (typeof scope === 'string') {
    return scope;
  }
  const item = scope as { raw?: string; scope?: string };
  return item.raw ?? item.scope ?? String(scope);
}

/** An account as the api answers it; older services list scopes as grant objects, which scopeString reads too. */
export function toServiceAccount(body: Schemas['ServiceAccountDto']): ServiceAccount {
  return {
    id: body.id,
    name: body.name,
    principal: body.principal,
    token_prefix: body.token_prefix,
    scopes: Array.isArray(body.scopes) ? body.scopes.map(scopeString) : [],
    created_at: body.created_at,
    expires_at: body.expires_at ?? null,
    last_used_at: body.last_used_at ?? null,
    last_used_ip: body.last_used_ip ?? null,
    revoked_at: body.revoked_at ?? null,
  };
}

/** An account whose token works. An expired account keeps revoked_at null (its name may have been minted again). */
function isActive(account: ServiceAccount): boolean {
  return account.revoked_at === null && (account.expires_at === null || account.expires_at > Date.now() / 1000);
}

/** What a credential for `svc tokens`, `connect` and `disconnect --revoke` needs. */
export const SERVICE_ACCOUNTS_CREDENTIAL_HINT =
  'Use an admin credential: SVC_ADMIN_TOKEN with service_accounts scopes (or platform:admin), or OS_SECURITY_KEY.';

/** Whether `token` is the account's current one: tokens begin with the account's display prefix. */
export function isTokenOf(account: { token_prefix: string }, token: string): boolean {
  return token.startsWith(account.token_prefix);
}

/** How every service-account token begins; any other bearer (a user's token, the security key) is no account's. */
const ACCOUNT_TOKEN_PREFIX = 'svc_pat_';

/** Whether a bearer found in a client's config is a service-account token (of some service; which, only it can say). */
export function isServiceAccountToken(token: string | null): token is string {
  return token?.startsWith(ACCOUNT_TOKEN_PREFIX) ?? false;
}

/** The part of a token the service lists as its account's token_prefix: `svc_pat_` and seven characters. */
export function listedTokenPrefix(token: string): string {
  return token.slice(0, ACCOUNT_TOKEN_PREFIX.length + 7);
}

/** The service's 429 detail for a token lookup refused after too many failed ones from the caller's address. */
const THROTTLED_LOOKUP = 'Too many failed authentication attempts';

/**
 * Which account a token found in a client's config is. `none`: no account to revoke (it no longer works, or is no
 * service-account token). `unlisted`: no account lists it as its current token, so it was not sent (see
 * tokenHolder). `unknown`: it may still work, and whose it is cannot be told (`name` when the service said it: an
 * account the credential does not list); `why` says so.
 */
export type TokenHolder =
  | { status: 'none' }
  | { status: 'unlisted' }
  | { status: 'account'; account: ServiceAccount }
  | { status: 'unknown'; name: string | null; why: string };

/**
 * Which of the `active` accounts holds `token`, proven by the service at `serviceUrl`: its `GET /config` names the
 * principal a token is. A token without config:read is refused there (403) but works; it is then the account
 * whose listed prefix it begins with, when exactly one does. A prefix alone proves nothing: anyone can write one.
 * `listsEveryAccount`: `active` is every active account (the security key's list), so a token that no listed
 * prefix begins is none's current one (expired, revoked, or replaced by a rotation and in its grace at most a day)
 * and is not sent: made-up tokens would only count as failed lookups against this address.
 */
export async function tokenHolder(
  serviceUrl: string,
  token: string,
  active: ServiceAccount[],
  listsEveryAccount: boolean,
): Promise<TokenHolder> {
  if (!isServiceAccountToken(token)) {
    return { status: 'none' };
  }
  const prefixed = active.filter((account) => isTokenOf(account, token));
  if (prefixed.length === 0 && listsEveryAccount) {
    return { status: 'unlisted' };
  }
  let answer: Answer & { data?: Schemas['ConfigDto'] };
  try {
    answer = await serviceClient(serviceUrl, token).GET('/config');
  } catch (error) {
    return { status: 'unknown', name: null, why: `the service could not be asked whose token it is (${String(error)})` };
  }
  const { status } = answer.response;
  // The service throttles failed lookups only (a working token is never throttled): a throttled token is a dead one.
  if (status === 401 || (status === 429 && errorDetail(answer) === THROTTLED_LOOKUP)) {
    return { status: 'none' };
  }
  if (status === 403) {
    return prefixed.length === 1
      ? { status: 'account', account: prefixed[0] }
      : {
          status: 'unknown',
          name: null,
          why: 'its token works, and whose it is cannot be told: it lacks config:read, and this credential lists no account its prefix is',
        };
  }
  if (status !== 200 || !answer.data) {
    return { status: 'unknown', name: null, why: `the service did not say whose token it is (${status}: ${errorDetail(answer)})` };
  }
  const principal: unknown = answer.data.principal;
  if (typeof principal !== 'string' || !principal.startsWith('sa:')) {
    return { status: 'none' };
  }
  const name = principal.slice('sa:'.length);
  const account = active.find((candidate) => candidate.name === name);
  return account ? { status: 'account', account } : { status: 'unknown', name, why: 'this credential cannot see the account to revoke it' };
}

/** The service-accounts API of one service, called with the admin credential. */
export class ServiceAccountsApi extends AdminApi {
  protected readonly credentialHint = SERVICE_ACCOUNTS_CREDENTIAL_HINT;
  /**
   * Whether the lists this credential reads surely hold every account: the security key's do. A service account's
   * token sees only the accounts it minted (the api scopes its lists to their owner) unless it holds platform:admin.
   */
  readonly listsEveryAccount: boolean;

  constructor(baseUrl: string, credential: AdminCredential | null) {
    super(baseUrl, credential);
    this.listsEveryAccount = !credential?.value.startsWith(ACCOUNT_TOKEN_PREFIX);
  }

  /**
   * Why no active account has this name: a revoked or expired one says so, and how to get a working one
   * (the name can be minted again), rather than that nothing by that name exists while the list shows it.
   * `accounts`: every account (list()), when the caller has it already.
   */
  async missing(name: string, accounts?: ServiceAccount[]): Promise<CliError> {
    const latest = (accounts ?? (await this.list())).filter((account) => account.name === name).at(-1);
    const when = (epoch: number) => new Date(epoch * 1000).toISOString();
    const create = `Mint a new one with: svc tokens create ${name}`;
    if (latest?.revoked_at != null) {
      return new CliError(`Service account '${name}' is revoked (since ${when(latest.revoked_at)}).`, create);
    }
    if (latest && !isActive(latest) && latest.expires_at !== null) {
      return new CliError(`Service account '${name}' expired at ${when(latest.expires_at)}: its token no longer works.`, create);
    }
    return this.notFound(name, 'List them with: svc tokens list');
  }

  /** No active account of that name, as far as this credential can tell. */
  notFound(name: string, hint?: string): CliError {
    const unseen = this.listsEveryAccount ? '' : ' (or not visible to this credential)';
    return new CliError(`No service account named '${name}' found${unseen}.`, hint);
  }

  protected override refusal(answer: Answer): string {
    return `The admin credential may not do this (${errorDetail(answer)}).`;
  }

  async mint(request: MintRequest): Promise<MintedServiceAccount> {
    const body: Schemas['CreateServiceAccountDto'] = { name: request.name };
    if (request.scopes) {
      body.scopes = request.scopes.map((scope) => ({ scope, effect: 'allow' }));
    }
    if (request.expiresInDays === null) {
      body.never_expires = true;
    } else if (request.expiresInDays !== undefined) {
      body.expires_in_days = request.expiresInDays;
    }
    if (request.privileged) {
      body.allow_privileged_scopes = true;
    }
    const answer = await this.send(this.client.POST('/service-accounts', { body }));
    if (answer.response.status === 409) {
      throw new NameConflictError(`A service account named '${request.name}' already exists.`);
    }
    // A 400 is a scope the service does not know, or a privileged one without the flag: the first needs the syntax.
    const hint = answer.response.status === 400 ? SCOPE_SYNTAX : undefined;
    return this.minted(this.expect(answer, 201, `Could not create service account '${request.name}'`, hint));
  }

  /** Every account, page by page (including revoked ones unless activeOnly). */
  async list(activeOnly = false): Promise<ServiceAccount[]> {
    return (await this.rows(activeOnly)).map(toServiceAccount);
  }

  /**
   * The principal other than the caller that minted an account (its `created_by`, from findActiveMinted), and so
   * may rotate or revoke it whenever it likes: a token of it is never the caller's alone. Null when the caller
   * minted it, or the security key did (whoever holds the key holds every right already).
   */
  async otherOwner(mintedBy: string | null): Promise<string | null> {
    if (mintedBy === null) {
      return null;
    }
    // Read once per credential: connect asks for each client's account.
    this.caller ??= this.callerPrincipal();
    const caller = await this.caller;
    return caller === null || caller.principal === mintedBy ? null : mintedBy;
  }

  private caller: Promise<{ principal: string | null } | null> | undefined;

  /**
   * Who this credential is (GET /config's `principal`, null for the security key), or null for a credential without
   * config:read: no admin (platform:admin grants it), and the api lets a non-admin rotate only an account it minted
   * itself, so the rotation is its own or is refused there.
   */
  private async callerPrincipal(): Promise<{ principal: string | null } | null> {
    // Not through send(): its 403 is an answer here, not a refused credential.
    const answer = await this.client.GET('/config');
    if (answer.response.status === 403) {
      return null;
    }
    return { principal: this.expect(answer, 200, 'Could not read which principal this credential is').principal };
  }

  private async rows(activeOnly: boolean): Promise<Schemas['ServiceAccountDto'][]> {
    return this.allPages(async (page) => {
      const query = {
        limit: 100,
        page,
        sort_by: 'created_at',
        sort_order: 'asc',
        include_revoked: activeOnly ? false : undefined,
      } as const;
      return this.expect(
        await this.send(this.client.GET('/service-accounts', { params: { query } })),
        200,
        'Could not list service accounts',
      );
    });
  }

  /** The accounts that are neither revoked nor expired. */
  async listActive(): Promise<ServiceAccount[]> {
    return (await this.list(true)).filter((account) => isActive(account));
  }

  async findActive(name: string): Promise<ServiceAccount | null> {
    return (await this.findActiveMinted(name))?.account ?? null;
  }

  /** The active account of that name with who minted it (`created_by`: null for the security key), from one listing. */
  async findActiveMinted(name: string): Promise<{ account: ServiceAccount; mintedBy: string | null } | null> {
    for (const row of await this.rows(true)) {
      const account = toServiceAccount(row);
      if (account.name === name && isActive(account)) {
        return { account, mintedBy: row.created_by ?? null };
      }
    }
    return null;
  }

  async revoke(account: ServiceAccount): Promise<ServiceAccount> {
    const answer = await this.send(this.client.DELETE('/service-accounts/{id}', { params: { path: { id: account.id } } }));
    this.found(account, answer);
    const { status } = answer.response;
    if (status !== 200 && status !== 204) {
      throw this.failure(`Could not revoke service account '${account.name}'`, answer);
    }
    // A 204 carries no body: the revocation time is stamped locally then.
    return answer.data ? toServiceAccount(answer.data) : { ...account, revoked_at: Math.floor(Date.now() / 1000) };
  }

  /** A new token for the account; the old one keeps working for `graceSeconds` (absent: the server's default). */
  async rotate(account: ServiceAccount, graceSeconds?: number): Promise<MintedServiceAccount> {
    const answer = await this.send(
      this.client.POST('/service-accounts/{id}/rotate', { params: { path: { id: account.id } }, body: { grace_seconds: graceSeconds } }),
    );
    this.found(account, answer);
    if (answer.response.status === 409) {
      throw this.failure(
        `Service account '${account.name}' is no longer active`,
        answer,
        `Mint a new one: svc tokens create ${account.name}`,
      );
    }
    return this.minted(this.expect(answer, 200, `Could not rotate service account '${account.name}'`));
  }

  private minted(body: Schemas['CreatedServiceAccountDto']): MintedServiceAccount {
    return { ...toServiceAccount(body), token: body.token };
  }

  private found(account: ServiceAccount, answer: Answer): void {
    if (answer.response.status === 404) {
      throw this.notFound(account.name);
    }
  }
}

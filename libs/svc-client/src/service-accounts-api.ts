import { CliError } from '@app/cli-terminal';

import { errorDetail, httpRequest, HttpResult } from './http';

/** A service account as the CLI prints it: never the hash, and the token only where the spec says. */
export interface ServiceAccount {
  id: string;
  name: string;
  principal: string;
  token_prefix: string;
  scopes: string[];
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  last_used_ip: string | null;
  revoked_at: number | null;
}

export interface MintedServiceAccount extends ServiceAccount {
  token: string;
}

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

/** An account as the api answers it (older services list scopes as grant objects). */
type AccountBody = Omit<ServiceAccount, 'scopes'> & { scopes?: unknown };

export function toServiceAccount(body: AccountBody): ServiceAccount {
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

const CREDENTIAL_HINT = 'Use an admin credential: SVC_ADMIN_TOKEN with service_accounts scopes (or platform:admin), or OS_SECURITY_KEY.';

/** The service-accounts API of one service, called with the admin credential. */
export class ServiceAccountsApi {
  constructor(
    private readonly baseUrl: string,
    private readonly credential: string | null,
  ) {}

  async mint(request: MintRequest): Promise<MintedServiceAccount> {
    const body: Record<string, unknown> = { name: request.name };
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
    const result = await this.call('POST', '/service-accounts', body);
    if (result.status === 409) {
      throw new NameConflictError(`A service account named '${request.name}' already exists.`);
    }
    if (result.status !== 201) {
      throw new CliError(`Could not create service account '${request.name}': ${errorDetail(result)}`);
    }
    return { ...toServiceAccount(result.body), token: result.body.token };
  }

  /** Every account, page by page (including revoked ones unless activeOnly). */
  async list(activeOnly = false): Promise<ServiceAccount[]> {
    const accounts: ServiceAccount[] = [];
    for (let page = 1; ; page += 1) {
      const query = `limit=100&page=${page}&sort_by=created_at&sort_order=asc${activeOnly ? '&include_revoked=false' : ''}`;
      const result = await this.call('GET', `/service-accounts?${query}`);
      if (result.status !== 200) {
        throw new CliError(`Could not list service accounts: ${errorDetail(result)}`);
      }
      accounts.push(...(result.body.data as AccountBody[]).map(toServiceAccount));
      if (page >= (result.body.meta?.total_pages ?? 1)) {
        return accounts;
      }
    }
  }

  async findActive(name: string): Promise<ServiceAccount | null> {
    // An expired account keeps revoked_at null (its name may have been minted again): active also means unexpired.
    const now = Date.now() / 1000;
    return (
      (await this.list(true)).find(
        (account) => account.name === name && account.revoked_at === null && (account.expires_at === null || account.expires_at > now),
      ) ?? null
    );
  }

  async revoke(account: ServiceAccount): Promise<ServiceAccount> {
    const result = await this.call('DELETE', `/service-accounts/${encodeURIComponent(account.id)}`);
    if (result.status === 404) {
      throw new CliError(`No service account named '${account.name}' found.`);
    }
    if (result.status !== 200 && result.status !== 204) {
      throw new CliError(`Could not revoke service account '${account.name}': ${errorDetail(result)}`);
    }
    // A 204 carries no body: the revocation time is stamped locally then.
    return result.status === 200 && result.body ? toServiceAccount(result.body) : { ...account, revoked_at: Math.floor(Date.now() / 1000) };
  }

  /** A new token for the account; the old one keeps working for `graceSeconds` (absent: the server's default). */
  async rotate(account: ServiceAccount, graceSeconds?: number): Promise<MintedServiceAccount> {
    const result = await this.call(
      'POST',
      `/service-accounts/${encodeURIComponent(account.id)}/rotate`,
      graceSeconds === undefined ? {} : { grace_seconds: graceSeconds },
    );
    if (result.status === 404) {
      throw new CliError(`No service account named '${account.name}' found.`);
    }
    if (result.status === 409) {
      throw new CliError(
        `Service account '${account.name}' is no longer active: ${errorDetail(result)}`,
        `Mint a new one: svc tokens create ${account.name}`,
      );
    }
    if (result.status !== 200) {
      throw new CliError(`Could not rotate service account '${account.name}': ${errorDetail(result)}`);
    }
    return { ...toServiceAccount(result.body), token: result.body.token };
  }

  private async call(method: string, path: string, json?: unknown): Promise<HttpResult> {
    const result = await httpRequest(method, `${this.baseUrl}${path}`, { credential: this.credential, json });
    if (result.status === 401 || result.status === 403) {
      throw new CliError(`The service rejected the admin credential (${errorDetail(result)}).`, CREDENTIAL_HINT);
    }
    return result;
  }
}

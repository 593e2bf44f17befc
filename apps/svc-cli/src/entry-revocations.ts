import { ClientAdapter, IN_PLACE_CLIENTS, InPlaceClientId, McpEntry, readableEntries } from '@app/client-adapters';
import { ServiceAccount, ServiceAccountsApi, TokenHolder, tokenHolder, urlBelongsTo } from '@app/svc-client';

import { svcInvocation } from './invocation';

export interface Revocation {
  account: string;
  status: 'revoked' | 'not-found' | 'failed';
  error: string | null;
}

export interface RevocationOutcome {
  revocations: Revocation[];
  /** Entries that stay (by `entryKey`), and why: each holds a token that may still work and was not revoked. */
  kept: Map<string, string>;
  /** Entries that go although their token still works (another account than --name's), and what to do about it. */
  stillWorking: Map<string, string>;
}

export interface RevocationRequest {
  api: ServiceAccountsApi;
  serviceUrl: string;
  /** Every active account the credential lists. */
  active: ServiceAccount[];
  adapters: Record<InPlaceClientId, ClientAdapter>;
  /** --name: only this account. */
  accountName: string | undefined;
  /** Each selected client's entries that are to be removed. */
  going: Map<InPlaceClientId, McpEntry[]>;
}

/** Names one entry of one client's configs. */
export function entryKey(client: InPlaceClientId, entry: McpEntry): string {
  return `${client}\0${entry.location}\0${entry.name}`;
}

/**
 * `svc disconnect --revoke`: revokes the accounts whose tokens the entries going hold, as the service proves them
 * (never an account merely named after the client: another machine's may bear that name). An account that an entry
 * staying in the configs svc reads still holds is not revoked, so that client keeps working; nor is one the
 * credential cannot see. A token goes only to the service its entry is for.
 */
export function revokeHeldAccounts(request: RevocationRequest): Promise<RevocationOutcome> {
  return new EntryRevocations(request).run();
}

type TokenEntry = McpEntry & { token: string };

/** `keepsEntries`: the account's token still works and the entries going are its only copies here. */
interface Decision {
  revocation: Revocation;
  keepsEntries: boolean;
}

interface HeldEntry {
  client: InPlaceClientId;
  entry: TokenEntry;
}

class EntryRevocations {
  private readonly holders = new Map<string, Promise<TokenHolder>>();
  /** What became of each account (by id) or unidentified token: decided once, however many entries hold it. */
  private readonly decided = new Map<string, Decision>();
  private readonly outcome: RevocationOutcome = { revocations: [], kept: new Map(), stillWorking: new Map() };
  private readonly goingKeys: Set<string>;
  private staying: HeldEntry[] | undefined;

  constructor(private readonly request: RevocationRequest) {
    this.goingKeys = new Set([...request.going].flatMap(([client, entries]) => entries.map((entry) => entryKey(client, entry))));
  }

  async run(): Promise<RevocationOutcome> {
    const { accountName } = this.request;
    for (const [client, entries] of this.request.going) {
      let heldAny = false;
      for (const entry of entries.filter((candidate) => this.holdsTokenHere(candidate))) {
        heldAny = (await this.settle(client, entry)) || heldAny;
      }
      if (!heldAny && accountName === undefined) {
        this.outcome.revocations.push({ account: client, status: 'not-found', error: null });
      }
    }
    if (accountName !== undefined && !this.outcome.revocations.some((revocation) => revocation.account === accountName)) {
      const byName = `${svcInvocation()} tokens revoke ${accountName} revokes it by name`;
      this.outcome.revocations.push({ account: accountName, status: 'not-found', error: `no entry removed holds its token; ${byName}` });
    }
    return this.outcome;
  }

  private holdsTokenHere(entry: McpEntry): entry is TokenEntry {
    return entry.token !== null && urlBelongsTo(entry.url, this.request.serviceUrl);
  }

  /** What becomes of one entry going and its token; whether it held one that may still work. */
  private async settle(client: InPlaceClientId, entry: TokenEntry): Promise<boolean> {
    const key = entryKey(client, entry);
    const { accountName } = this.request;
    const holder = await this.holderOf(entry.token);
    if (holder.status === 'none') {
      return false;
    }
    if (holder.status === 'unknown') {
      // The service said whose it is, and it is not the account --name asks for: the entry goes as without --revoke.
      if (accountName !== undefined && holder.name !== null && holder.name !== accountName) {
        this.outcome.stillWorking.set(key, `Its token, account ${holder.name}'s, still works.`);
        return false;
      }
      const { why } = holder;
      await this.once(`token:${entry.token}`, async () => ({
        revocation: { account: holder.name ?? accountName ?? client, status: 'failed', error: why },
        keepsEntries: true,
      }));
      this.outcome.kept.set(key, `Kept ${entry.name}: ${why}, so it holds a token that still works.`);
      return true;
    }
    const { account } = holder;
    if (accountName !== undefined && account.name !== accountName) {
      const revoke = `${svcInvocation()} tokens revoke ${account.name}`;
      this.outcome.stillWorking.set(key, `Its token, account ${account.name}'s, still works (${revoke}).`);
      return false;
    }
    const decision = await this.once(`account:${account.id}`, () => this.decide(account));
    if (decision.keepsEntries) {
      this.outcome.kept.set(key, `Kept ${entry.name}: its account could not be revoked, so it holds a token that still works.`);
    }
    return true;
  }

  private async once(key: string, decide: () => Promise<Decision>): Promise<Decision> {
    let decision = this.decided.get(key);
    if (!decision) {
      decision = await decide();
      this.decided.set(key, decision);
      this.outcome.revocations.push(decision.revocation);
    }
    return decision;
  }

  /** An account another entry still holds is left alone: the entries going may go, its token keeps a copy. */
  private async decide(account: ServiceAccount): Promise<Decision> {
    const stillHeld = await this.stayingHolderOf(account);
    if (stillHeld) {
      const where = `${stillHeld.client}'s entry '${stillHeld.entry.name}' in ${stillHeld.entry.location}`;
      const error = `${where} still holds its token: disconnect that client too, or ${svcInvocation()} tokens revoke ${account.name}`;
      return { revocation: { account: account.name, status: 'failed', error }, keepsEntries: false };
    }
    try {
      await this.request.api.revoke(account);
      return { revocation: { account: account.name, status: 'revoked', error: null }, keepsEntries: false };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { revocation: { account: account.name, status: 'failed', error: message }, keepsEntries: true };
    }
  }

  /** An entry staying in the configs svc reads (any client's, selected or not) whose token is the account's. */
  private async stayingHolderOf(account: ServiceAccount): Promise<HeldEntry | null> {
    this.staying ??= IN_PLACE_CLIENTS.flatMap((client) =>
      readableEntries(this.request.adapters[client])
        .filter((entry) => this.holdsTokenHere(entry))
        .filter((entry) => !this.goingKeys.has(entryKey(client, entry)))
        .map((entry) => ({ client, entry })),
    );
    for (const held of this.staying) {
      const holder = await this.holderOf(held.entry.token);
      if (holder.status === 'account' && holder.account.id === account.id) {
        return held;
      }
    }
    return null;
  }

  /** Each distinct token is asked about once. */
  private holderOf(token: string): Promise<TokenHolder> {
    let holder = this.holders.get(token);
    if (!holder) {
      const { serviceUrl, active, api } = this.request;
      holder = tokenHolder(serviceUrl, token, active, api.listsEveryAccount);
      this.holders.set(token, holder);
    }
    return holder;
  }
}

import { ClientAdapter, IN_PLACE_CLIENTS, InPlaceClientId, McpEntry } from '@app/client-adapters';
import { ServiceAccount, ServiceAccountsApi, TokenHolder, urlBelongsTo } from '@app/svc-client';

import { svcInvocation } from './invocation';

export interface Revocation {
  account: string;
  status: 'revoked' | 'not-found' | 'failed';
  error: string | null;
}

export interface RevocationOutcome {
  revocations: Revocation[];
  /** Clients whose entries stay, and why: they hold a token that still works and was not revoked. */
  kept: Map<InPlaceClientId, string>;
}

type TokenEntry = McpEntry & { token: string };

interface HeldEntry {
  client: InPlaceClientId;
  entry: TokenEntry;
}

/** What became of one account: `keepsEntries` when its token still works and the entries going are its only copy. */
interface Decision {
  revocation: Revocation;
  keepsEntries: string | null;
}

/**
 * `svc disconnect --revoke`: revokes the accounts whose tokens the entries going hold, as the service proves them
 * (never an account merely named after the client: another machine's may bear that name). An account that an entry
 * staying on this machine still holds is not revoked, so that client keeps working; nor is one the credential cannot
 * see. `accountName` (--name) narrows it to that one account.
 */
export class EntryRevocations {
  private readonly holders = new Map<string, Promise<TokenHolder>>();
  private readonly decisions = new Map<string, Decision>();
  private readonly revocations: Revocation[] = [];
  private readonly kept = new Map<InPlaceClientId, string>();
  private goingKeys = new Set<string>();
  private staying: HeldEntry[] | undefined;

  constructor(
    private readonly api: ServiceAccountsApi,
    private readonly serviceUrl: string,
    private readonly active: ServiceAccount[],
    private readonly adapters: Record<InPlaceClientId, ClientAdapter>,
    private readonly accountName: string | undefined,
  ) {}

  /** `going`: each selected client's entries that are to be removed. A token goes only to the service it is for. */
  async revoke(going: Map<InPlaceClientId, McpEntry[]>): Promise<RevocationOutcome> {
    this.goingKeys = new Set([...going].flatMap(([client, entries]) => entries.map((entry) => entryKey(client, entry))));
    for (const [client, entries] of going) {
      let heldAny = false;
      for (const entry of entries.filter((candidate) => this.holdsTokenHere(candidate))) {
        heldAny = (await this.revokeHolderOf(client, entry)) || heldAny;
      }
      if (!heldAny && this.accountName === undefined) {
        this.revocations.push({ account: client, status: 'not-found', error: null });
      }
    }
    if (this.accountName !== undefined && !this.decisions.has(this.accountName)) {
      const byName = `${svcInvocation()} tokens revoke ${this.accountName} revokes it by name`;
      this.revocations.push({ account: this.accountName, status: 'not-found', error: `no entry removed holds its token; ${byName}` });
    }
    return { revocations: this.revocations, kept: this.kept };
  }

  private holdsTokenHere(entry: McpEntry): entry is TokenEntry {
    return entry.token !== null && urlBelongsTo(entry.url, this.serviceUrl);
  }

  /** Whether the entry's token is an account's (whatever became of it); a token that no longer works is none. */
  private async revokeHolderOf(client: InPlaceClientId, entry: TokenEntry): Promise<boolean> {
    const holder = await this.holderOf(entry.token);
    if (holder.status === 'refused' || holder.status === 'not-an-account') {
      return false;
    }
    const name = holder.status === 'account' ? holder.account.name : holder.name;
    // The service said whose it is, and it is not the account --name asks for.
    if (this.accountName !== undefined && name !== null && name !== this.accountName) {
      return false;
    }
    const label = name ?? this.accountName ?? client;
    let decision = this.decisions.get(label);
    if (!decision) {
      decision = await this.decide(label, holder);
      this.decisions.set(label, decision);
      this.revocations.push(decision.revocation);
    }
    if (decision.keepsEntries !== null) {
      this.kept.set(client, decision.keepsEntries);
    }
    return true;
  }

  private async decide(label: string, holder: TokenHolder): Promise<Decision> {
    if (holder.status !== 'account') {
      return {
        revocation: { account: label, status: 'failed', error: 'this credential cannot see the account to revoke it' },
        keepsEntries: 'Kept: it holds a token that still works, of an account this credential cannot see to revoke',
      };
    }
    const stillHeld = await this.stayingHolderOf(holder.account);
    if (stillHeld) {
      const where = `${stillHeld.client}'s entry '${stillHeld.entry.name}' in ${stillHeld.entry.location}`;
      const error = `${where} still holds its token: disconnect that client too, or ${svcInvocation()} tokens revoke ${label}`;
      return { revocation: { account: label, status: 'failed', error }, keepsEntries: null };
    }
    try {
      await this.api.revoke(holder.account);
      return { revocation: { account: label, status: 'revoked', error: null }, keepsEntries: null };
    } catch (error) {
      return {
        revocation: { account: label, status: 'failed', error: error instanceof Error ? error.message : String(error) },
        keepsEntries: 'Kept: its account could not be revoked, so this entry holds a token that still works',
      };
    }
  }

  /** An entry staying on this machine (any client, selected or not) whose token is the account's. */
  private async stayingHolderOf(account: ServiceAccount): Promise<HeldEntry | null> {
    this.staying ??= IN_PLACE_CLIENTS.flatMap((client) =>
      this.adapters[client]
        .entries()
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

  /** Each distinct token is sent once. */
  private holderOf(token: string): Promise<TokenHolder> {
    let holder = this.holders.get(token);
    if (!holder) {
      holder = this.api.holderOf(token, this.active);
      this.holders.set(token, holder);
    }
    return holder;
  }
}

function entryKey(client: InPlaceClientId, entry: McpEntry): string {
  return `${client}\0${entry.location}\0${entry.name}`;
}

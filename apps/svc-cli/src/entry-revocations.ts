import { readFileSync } from 'node:fs';

import { ClientAdapter, IN_PLACE_CLIENTS, InPlaceClientId, McpEntry } from '@app/client-adapters';
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
  keep: Map<string, string>;
  /** Entries that go with a word on their token, which may still work: not revoked, and why. */
  tokenNotes: Map<string, string>;
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
  return [client, entry.location, entry.name, entry.url].join('\0');
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
  /** What became of each account: decided once, however many entries hold it. */
  private readonly decided = new Map<string, Decision>();
  private readonly outcome: RevocationOutcome = { revocations: [], keep: new Map(), tokenNotes: new Map() };
  private readonly goingKeys: Set<string>;
  private staying: HeldEntry[] | undefined;
  private unparsed: { path: string; text: string }[] | undefined;

  constructor(private readonly request: RevocationRequest) {
    this.goingKeys = new Set([...request.going].flatMap(([client, entries]) => entries.map((entry) => entryKey(client, entry))));
  }

  async run(): Promise<RevocationOutcome> {
    const { accountName, serviceUrl } = this.request;
    for (const [client, entries] of this.request.going) {
      let heldAny = false;
      for (const entry of entries.filter(holdsToken)) {
        if (!urlBelongsTo(entry.url, serviceUrl)) {
          // --server-name removes that entry whatever it points at; its token is never sent here to be checked.
          this.outcome.tokenNotes.set(entryKey(client, entry), `Its token was not revoked: the entry points at ${entry.url}.`);
          heldAny = true;
          continue;
        }
        heldAny = (await this.settle(client, entry)) || heldAny;
      }
      if (!heldAny && accountName === undefined) {
        this.outcome.revocations.push({ account: client, status: 'not-found', error: this.stillActive(client) });
      }
    }
    if (accountName !== undefined && !this.outcome.revocations.some((revocation) => revocation.account === accountName)) {
      const byName = `${svcInvocation()} tokens revoke ${accountName} revokes it by name`;
      this.outcome.revocations.push({ account: accountName, status: 'not-found', error: `no entry removed holds its token; ${byName}` });
    }
    return this.outcome;
  }

  /**
   * Why an account of the client's name, which no entry going holds, is left active: it is revoked by name only
   * (another machine may be connected as it), and a disconnect run after the entries went finds no token to go by.
   */
  private stillActive(name: string): string | null {
    return this.request.active.some((account) => account.name === name)
      ? `still active: no entry removed holds its token; ${svcInvocation()} tokens revoke ${name} revokes it by name (any client still using it stops working)`
      : null;
  }

  /** Settles one entry going: whether its token is, or may be, an account's (one that no longer works is none's). */
  private async settle(client: InPlaceClientId, entry: TokenEntry): Promise<boolean> {
    const key = entryKey(client, entry);
    const { accountName } = this.request;
    const holder = await this.holderOf(entry.token);
    if (holder.status === 'none') {
      return false;
    }
    if (holder.status === 'unlisted') {
      this.outcome.tokenNotes.set(key, UNLISTED_NOTE);
      return false;
    }
    const name = holder.status === 'account' ? holder.account.name : holder.name;
    if (accountName !== undefined && name !== null && name !== accountName) {
      // Not the account --name asks for: the entry goes as it would without --revoke, said.
      const revoke = holder.status === 'account' ? ` (${svcInvocation()} tokens revoke ${name})` : '';
      this.outcome.tokenNotes.set(key, `Its token, account ${name}'s, still works${revoke}.`);
      return false;
    }
    if (holder.status === 'unknown') {
      // Only an account the service named gets a revocation row: a guessed name could be another account's.
      if (name !== null) {
        const { why } = holder;
        await this.once(`name:${name}`, async () => ({ revocation: { account: name, status: 'failed', error: why }, keepsEntries: true }));
      }
      this.outcome.keep.set(key, `Kept ${entry.name}, whose token was not revoked: ${holder.why}.`);
      return true;
    }
    const decision = await this.once(`account:${holder.account.id}`, () => this.decide(holder.account, entry.token));
    if (decision.keepsEntries) {
      this.outcome.keep.set(key, `Kept ${entry.name}, whose token still works: its account could not be revoked.`);
    }
    return true;
  }

  /** Decides once per key, and reports the decision then. */
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
  private async decide(account: ServiceAccount, token: string): Promise<Decision> {
    const revokeByName = `${svcInvocation()} tokens revoke ${account.name}`;
    const stillHeld = await this.stayingHolderOf(account, token);
    if (stillHeld) {
      const where = `${stillHeld.client}'s entry '${stillHeld.entry.name}' in ${stillHeld.entry.location}`;
      const error = `${where} still holds its token: disconnect that client too, or ${revokeByName}`;
      return { revocation: { account: account.name, status: 'failed', error }, keepsEntries: false };
    }
    const unparsed = this.unparsedHolderOf(token);
    if (unparsed) {
      const error = `${unparsed} does not parse, and its text holds the token, which its client may use once the file is mended: mend it and run again, or ${revokeByName}`;
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

  /**
   * An entry staying in the configs svc reads (any client's, selected or not, and those a client reads in other
   * directories) that holds the account's token: the same token whatever URL spells the service there, or one the
   * service says is the account's.
   */
  private async stayingHolderOf(account: ServiceAccount, token: string): Promise<HeldEntry | null> {
    this.staying ??= IN_PLACE_CLIENTS.flatMap((client) => {
      const adapter = this.request.adapters[client];
      const stayingHere = adapter.entries().filter((entry) => !this.goingKeys.has(entryKey(client, entry)));
      return [...stayingHere, ...adapter.entriesElsewhere()].filter(holdsToken).map((entry) => ({ client, entry }));
    });
    const sameToken = this.staying.find((held) => held.entry.token === token);
    if (sameToken) {
      return sameToken;
    }
    for (const held of this.staying.filter((candidate) => urlBelongsTo(candidate.entry.url, this.request.serviceUrl))) {
      const holder = await this.holderOf(held.entry.token);
      if (holder.status === 'account' && holder.account.id === account.id) {
        return held;
      }
    }
    return null;
  }

  /** A config file of any client that does not parse but holds the token as text. */
  private unparsedHolderOf(token: string): string | null {
    // Read once, and only when some account is about to be revoked.
    this.unparsed ??= IN_PLACE_CLIENTS.flatMap((client) => {
      const adapter = this.request.adapters[client];
      if (adapter.unreadable().length === 0) {
        return [];
      }
      const files = new Set([adapter.location(false), ...(adapter.projectScope ? [adapter.location(true)] : [])]);
      return [...files].flatMap((path) => {
        const text = textOf(path);
        return text === null ? [] : [{ path, text }];
      });
    });
    return this.unparsed.find((file) => file.text.includes(token))?.path ?? null;
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

/** Said of an entry whose token was not sent: the credential lists every account, and none lists this token. */
const UNLISTED_NOTE =
  "Its token is no account's current one: revoked or expired, or replaced by a rotation (then it works until the rotation's grace ends).";

/** The file's text, or null when it cannot be read (a directory, no permission: its client cannot read it either). */
function textOf(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

function holdsToken(entry: McpEntry): entry is TokenEntry {
  return entry.token !== null;
}

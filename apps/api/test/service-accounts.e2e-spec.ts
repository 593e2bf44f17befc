import { createHash } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { expectErrorBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';

const DEFAULT_SCOPES = ['agents:run', 'teams:run', 'workflows:run', 'sessions:read', 'config:read'];
const DAY = 86_400;

describe('service accounts (security_key mode)', () => {
  let api: RunningApi;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY });
  });
  afterAll(() => api?.stop());

  describe('POST /service-accounts', () => {
    it('mints with the default scopes and a 90-day expiry, returning the token once', async () => {
      const name = uniqueName();
      const response = await call(api.url, 'POST', '/service-accounts', { token: ROOT_KEY, json: { name } });
      expect(response.status).toBe(201);
      const account = response.body;
      expect(account).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name,
        principal: `sa:${name}`,
        token_prefix: account.token.slice(0, 15),
        scopes: DEFAULT_SCOPES,
        created_by: null,
        created_at: expect.any(Number),
        expires_at: account.created_at + 90 * DAY,
        last_used_at: null,
        last_used_ip: null,
        revoked_at: null,
        token: expect.stringMatching(/^svc_pat_[0-9A-Za-z]{40,44}$/),
      });
      expect(Math.abs(account.created_at - Date.now() / 1000)).toBeLessThan(5);
    });

    it('stores only the SHA-256 hash of the token', async () => {
      const account = await mintAccount(api.url, ROOT_KEY);
      const [row] = await query<{ token_hash: string }>(databaseUrl, 'SELECT * FROM service_accounts WHERE id = $1', [account.id]);
      expect(row.token_hash).toBe(createHash('sha256').update(account.token).digest('hex'));
      expect(JSON.stringify(row)).not.toContain(account.token);
    });

    it('honours expires_in_days and never_expires (never_expires wins)', async () => {
      const short = await mintAccount(api.url, ROOT_KEY, { expires_in_days: 1 });
      expect(short.expires_at).toBe((short.created_at as number) + DAY);
      const forever = await mintAccount(api.url, ROOT_KEY, { never_expires: true, expires_in_days: 5 });
      expect(forever.expires_at).toBeNull();
    });

    it('grants requested scopes, including per-component ones', async () => {
      const account = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:echo-agent:run', 'config:read'] });
      expect(account.scopes).toEqual(['agents:echo-agent:run', 'config:read']);
    });

    it('takes scopes as plain strings too, mixed with grant objects, as responses list them', async () => {
      const response = await call(api.url, 'POST', '/service-accounts', {
        token: ROOT_KEY,
        json: { name: uniqueName(), scopes: ['schedules:write', { scope: 'config:read' }], allow_privileged_scopes: true },
      });
      expect(response.status, response.text).toBe(201);
      expect(response.body.scopes).toEqual(['schedules:write', 'config:read']);
      const invalid = await call(api.url, 'POST', '/service-accounts', {
        token: ROOT_KEY,
        json: { name: uniqueName(), scopes: ['agents'] },
      });
      expect(invalid.status).toBe(400);
    });

    it('honours an explicit empty scope list', async () => {
      const account = await mintAccount(api.url, ROOT_KEY, { scopes: [] });
      expect(account.scopes).toEqual([]);
    });

    it('answers 400 for invalid scope strings', async () => {
      const response = await call(api.url, 'POST', '/service-accounts', {
        token: ROOT_KEY,
        json: { name: uniqueName(), scopes: [{ scope: 'agents' }, { scope: 'nope:read' }, { scope: 'agents:run' }] },
      });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ detail: 'Invalid scope(s): agents, nope:read' });
    });

    it('answers 400 for privileged scopes without allow_privileged_scopes', async () => {
      for (const scope of ['sessions:write', 'agents:x:delete', 'platform:admin', 'service_accounts:read']) {
        const response = await call(api.url, 'POST', '/service-accounts', {
          token: ROOT_KEY,
          json: { name: uniqueName(), scopes: [{ scope }] },
        });
        expect(response.status, scope).toBe(400);
        expect(response.body.detail).toContain(`Privileged scope(s) require allow_privileged_scopes=true: ${scope}`);
      }
      const allowed = await mintAccount(api.url, ROOT_KEY, { scopes: ['platform:admin'], privileged: true });
      expect(allowed.scopes).toEqual(['platform:admin']);
    });

    it('answers 409 while an active account holds the name, and allows rotation after revoke', async () => {
      const first = await mintAccount(api.url, ROOT_KEY);
      const conflict = await call(api.url, 'POST', '/service-accounts', { token: ROOT_KEY, json: { name: first.name } });
      expect(conflict.status).toBe(409);
      expect(conflict.body).toEqual({
        detail: `An active service account named '${first.name}' already exists. Rotate its token (POST /service-accounts/{id}/rotate: the old one keeps working for a grace period), or revoke it first.`,
      });

      expect((await call(api.url, 'DELETE', `/service-accounts/${first.id}`, { token: ROOT_KEY })).status).toBe(200);
      const second = await mintAccount(api.url, ROOT_KEY, { name: first.name });
      expect(second.id).not.toBe(first.id);
      expect(second.principal).toBe(first.principal);
      expect((await call(api.url, 'GET', '/config', { token: first.token })).status).toBe(401);
      expect((await call(api.url, 'GET', '/config', { token: second.token })).status).toBe(200);
    });

    it('lets only the name’s last minter, or an admin, mint a used name again: its data stays under sa:<name>', async () => {
      const minter = () => mintAccount(api.url, ROOT_KEY, { scopes: ['service_accounts:write', 'config:read'], privileged: true });
      const [alice, bob] = await Promise.all([minter(), minter()]);
      const name = `reused-${Date.now()}`;
      const first = await mintAccount(api.url, alice.token, { name, scopes: ['config:read'] });
      expect((await call(api.url, 'DELETE', `/service-accounts/${first.id}`, { token: alice.token })).status).toBe(200);
      const taken = await call(api.url, 'POST', '/service-accounts', { token: bob.token, json: { name, scopes: ['config:read'] } });
      expectErrorBody(taken, 409);
      expect(taken.body.detail).toContain(`stays under sa:${name}`);
      const again = await mintAccount(api.url, alice.token, { name, scopes: ['config:read'] });
      expect(again.principal).toBe(`sa:${name}`);
      expect((await call(api.url, 'DELETE', `/service-accounts/${again.id}`, { token: alice.token })).status).toBe(200);
      expect((await mintAccount(api.url, ROOT_KEY, { name })).principal).toBe(`sa:${name}`);
    });

    it('keeps a name the security key minted, revoked or expired, from anyone but an admin (its data stays under it)', async () => {
      const bob = await mintAccount(api.url, ROOT_KEY, { scopes: ['service_accounts:write', 'sessions:read'], privileged: true });
      for (const end of ['revoked', 'expired'] as const) {
        const victim = await mintAccount(api.url, ROOT_KEY, { scopes: ['sessions:read'] });
        if (end === 'revoked') {
          expect((await call(api.url, 'DELETE', `/service-accounts/${victim.id}`, { token: ROOT_KEY })).status).toBe(200);
        } else {
          await query(databaseUrl, `UPDATE service_accounts SET expires_at = now() - interval '1 second' WHERE id = $1`, [victim.id]);
        }
        const taken = await call(api.url, 'POST', '/service-accounts', {
          token: bob.token,
          json: { name: victim.name, scopes: ['sessions:read'] },
        });
        expectErrorBody(taken, 409);
        expect(taken.body.detail, end).toContain(`stays under sa:${victim.name}`);
        expect((await mintAccount(api.url, ROOT_KEY, { name: victim.name })).principal).toBe(`sa:${victim.name}`);
      }
    });

    it('frees the name of an expired account without marking it revoked', async () => {
      const expired = await mintAccount(api.url, ROOT_KEY);
      await query(databaseUrl, `UPDATE service_accounts SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);
      const again = await mintAccount(api.url, ROOT_KEY, { name: expired.name });
      expect(again.id).not.toBe(expired.id);
      const [row] = await query(databaseUrl, 'SELECT revoked_at FROM service_accounts WHERE id = $1', [expired.id]);
      expect(row.revoked_at).toBeNull();
      const listed = await call(api.url, 'GET', '/service-accounts?limit=100&include_revoked=true', { token: ROOT_KEY });
      expect(listed.body.data.find((account: { id: string }) => account.id === expired.id)).toMatchObject({
        revoked_at: null,
        expires_at: expect.any(Number),
      });
      // The new account holds the name: a third mint is refused while it is active.
      expectErrorBody(await call(api.url, 'POST', '/service-accounts', { token: ROOT_KEY, json: { name: expired.name } }), 409);
    });
  });

  describe('GET /service-accounts', () => {
    it('never returns the token or its hash, and pages with meta', async () => {
      const minted = await mintAccount(api.url, ROOT_KEY);
      const response = await call(api.url, 'GET', '/service-accounts?limit=100', { token: ROOT_KEY });
      expect(response.status).toBe(200);
      expect(response.text).not.toContain(minted.token);
      expect(response.text).not.toContain('token_hash');
      const listed = response.body.data.find((account: { id: string }) => account.id === minted.id);
      expect(listed).toBeDefined();
      expect(listed).not.toHaveProperty('token');
      expect(response.body.meta).toEqual({
        page: 1,
        limit: 100,
        total_count: response.body.data.length,
        total_pages: 1,
        search_time_ms: expect.any(Number),
      });
    });

    it('paginates and sorts', async () => {
      const names = ['zz-a', 'zz-b', 'zz-c'].map((prefix) => uniqueName(prefix));
      for (const name of names) {
        await mintAccount(api.url, ROOT_KEY, { name });
      }
      const page1 = await call(api.url, 'GET', '/service-accounts?limit=2&page=1&sort_by=name&sort_order=desc', { token: ROOT_KEY });
      expect(page1.body.data.map((a: { name: string }) => a.name)).toEqual([names[2], names[1]]);
      expect(page1.body.meta.total_pages).toBe(Math.ceil(page1.body.meta.total_count / 2));
      const ascending = await call(api.url, 'GET', '/service-accounts?limit=100&sort_by=name&sort_order=asc', { token: ROOT_KEY });
      const sorted = ascending.body.data.map((a: { name: string }) => a.name);
      expect(sorted).toEqual([...sorted].sort());
      const unknownSort = await call(api.url, 'GET', '/service-accounts?sort_by=token_hash', { token: ROOT_KEY });
      expect(unknownSort.status).toBe(200);
    });

    it('hides revoked accounts with include_revoked=false', async () => {
      const revoked = await mintAccount(api.url, ROOT_KEY);
      await call(api.url, 'DELETE', `/service-accounts/${revoked.id}`, { token: ROOT_KEY });
      const all = await call(api.url, 'GET', '/service-accounts?limit=100', { token: ROOT_KEY });
      const active = await call(api.url, 'GET', '/service-accounts?limit=100&include_revoked=false', { token: ROOT_KEY });
      expect(all.body.data.some((a: { id: string }) => a.id === revoked.id)).toBe(true);
      expect(active.body.data.some((a: { id: string }) => a.id === revoked.id)).toBe(false);
    });
  });

  describe('DELETE /service-accounts/{id}', () => {
    it('revokes once, idempotently, and the token stops working at once', async () => {
      const account = await mintAccount(api.url, ROOT_KEY);
      expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
      const first = await call(api.url, 'DELETE', `/service-accounts/${account.id}`, { token: ROOT_KEY });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ id: account.id, revoked_at: expect.any(Number) });
      expect(first.body).not.toHaveProperty('token');
      const second = await call(api.url, 'DELETE', `/service-accounts/${account.id}`, { token: ROOT_KEY });
      expect(second.status).toBe(200);
      expect(second.body.revoked_at).toBe(first.body.revoked_at);
      const rejected = await call(api.url, 'GET', '/config', { token: account.token });
      expect(rejected.status).toBe(401);
      expect(rejected.body).toEqual({ detail: 'Invalid or expired service account token' });
    });

    it('answers 404 for an unknown id', async () => {
      const response = await call(api.url, 'DELETE', '/service-accounts/00000000-0000-4000-8000-000000000000', { token: ROOT_KEY });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ detail: "Service account '00000000-0000-4000-8000-000000000000' not found" });
    });
  });

  describe('a token minting tokens: what it mints ends with it', () => {
    const MINTER_SCOPES = ['service_accounts:write', 'config:read'];
    const mintWith = (token: string, fields: Record<string, unknown> = {}) =>
      mintAccount(api.url, token, { scopes: ['config:read'], ...fields });

    it('caps the expiry at the minting token’s own, whatever was asked; a shorter one is kept', async () => {
      const minter = await mintAccount(api.url, ROOT_KEY, { scopes: MINTER_SCOPES, privileged: true, expires_in_days: 5 });
      const expiresAt = minter.expires_at as number;
      expect((await mintWith(minter.token)).expires_at).toBe(expiresAt); // the default, 90 days
      expect((await mintWith(minter.token, { never_expires: true })).expires_at).toBe(expiresAt);
      expect((await mintWith(minter.token, { expires_in_days: 3650 })).expires_at).toBe(expiresAt);
      const shorter = await mintWith(minter.token, { expires_in_days: 1 });
      expect(shorter.expires_at).toBe((shorter.created_at as number) + DAY);
      // The security key (and a JWT) mints as asked.
      expect((await mintAccount(api.url, ROOT_KEY, { never_expires: true })).expires_at).toBeNull();
    });

    it('caps it at the end of the grace for a token a rotation replaced', async () => {
      const minter = await mintAccount(api.url, ROOT_KEY, { scopes: MINTER_SCOPES, privileged: true, never_expires: true });
      const rotated = await call(api.url, 'POST', `/service-accounts/${minter.id}/rotate`, {
        token: ROOT_KEY,
        json: { grace_seconds: 60 },
      });
      expect(rotated.status).toBe(200);
      const fromOldToken = await mintWith(minter.token, { never_expires: true });
      expect(fromOldToken.expires_at).toBeGreaterThan(Date.now() / 1000 + 50);
      expect(fromOldToken.expires_at).toBeLessThanOrEqual(Date.now() / 1000 + 60);
      expect((await mintWith(rotated.body.token, { never_expires: true })).expires_at).toBeNull();
    });

    it('revokes, with a token, every account minted with it and theirs, on down, and nothing else', async () => {
      const parent = await mintAccount(api.url, ROOT_KEY, { scopes: MINTER_SCOPES, privileged: true });
      const child = await mintWith(parent.token, { scopes: MINTER_SCOPES, allow_privileged_scopes: true });
      const grandchild = await mintWith(child.token);
      const sibling = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read'] });
      for (const account of [parent, child, grandchild]) {
        expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
      }

      const revoked = await call(api.url, 'DELETE', `/service-accounts/${parent.id}`, { token: ROOT_KEY });
      expect(revoked.status).toBe(200);
      expect(revoked.body).toMatchObject({ id: parent.id, revoked_at: expect.any(Number) });
      for (const account of [parent, child, grandchild]) {
        expect(await call(api.url, 'GET', '/config', { token: account.token })).toMatchObject({
          status: 401,
          body: { detail: 'Invalid or expired service account token' },
        });
      }
      expect((await call(api.url, 'GET', '/config', { token: sibling.token })).status).toBe(200);
      const rows = await query<{ id: string; revoked_at: Date | null }>(
        databaseUrl,
        'SELECT id, revoked_at FROM service_accounts WHERE id = ANY ($1::uuid[])',
        [[parent.id, child.id, grandchild.id, sibling.id]],
      );
      expect(Object.fromEntries(rows.map((row) => [row.id, row.revoked_at !== null]))).toEqual({
        [parent.id]: true,
        [child.id]: true,
        [grandchild.id]: true,
        [sibling.id]: false,
      });
    });

    it('leaves alone what a later account of the same name minted when an earlier one is revoked again', async () => {
      const name = uniqueName();
      const first = await mintAccount(api.url, ROOT_KEY, { name, scopes: MINTER_SCOPES, privileged: true });
      const firstChild = await mintWith(first.token);
      expect((await call(api.url, 'DELETE', `/service-accounts/${first.id}`, { token: ROOT_KEY })).status).toBe(200);
      const second = await mintAccount(api.url, ROOT_KEY, { name, scopes: MINTER_SCOPES, privileged: true });
      const secondChild = await mintWith(second.token);

      expect((await call(api.url, 'DELETE', `/service-accounts/${first.id}`, { token: ROOT_KEY })).status).toBe(200);
      expect((await call(api.url, 'GET', '/config', { token: secondChild.token })).status).toBe(200);
      expect((await call(api.url, 'GET', '/config', { token: firstChild.token })).status).toBe(401);
      // Revoking the later one takes its own child, and only that.
      expect((await call(api.url, 'DELETE', `/service-accounts/${second.id}`, { token: ROOT_KEY })).status).toBe(200);
      expect((await call(api.url, 'GET', '/config', { token: secondChild.token })).status).toBe(401);
    });

    it('refuses a mint by a token another replica still has cached after its account was revoked', async () => {
      const replica = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY });
      try {
        const minter = await mintAccount(api.url, ROOT_KEY, { scopes: MINTER_SCOPES, privileged: true });
        // The replica verifies the token once and caches it (30 s): it would accept it after the revoke below.
        expect((await call(replica.url, 'GET', '/config', { token: minter.token })).status).toBe(200);
        expect((await call(api.url, 'DELETE', `/service-accounts/${minter.id}`, { token: ROOT_KEY })).status).toBe(200);
        expect((await call(replica.url, 'GET', '/config', { token: minter.token })).status).toBe(200);

        const name = uniqueName();
        const refused = await call(replica.url, 'POST', '/service-accounts', {
          token: minter.token,
          json: { name, scopes: ['config:read'], never_expires: true },
        });
        expect(refused).toMatchObject({ status: 401, body: { detail: 'Invalid or expired service account token' } });
        expect(await query(databaseUrl, 'SELECT id FROM service_accounts WHERE name = $1', [name])).toEqual([]);
      } finally {
        await replica.stop();
      }
    });
  });

  describe('token verification', () => {
    it('runs as principal sa:<name> with its scopes and records last_used_at', async () => {
      const account = await mintAccount(api.url, ROOT_KEY);
      const response = await call(api.url, 'GET', '/config', { token: account.token });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ principal: `sa:${account.name}`, scopes: DEFAULT_SCOPES });
      await expect
        .poll(
          async () =>
            (
              await query<{ last_used_at: Date | null }>(databaseUrl, 'SELECT last_used_at FROM service_accounts WHERE id = $1', [
                account.id,
              ])
            )[0].last_used_at,
        )
        .not.toBeNull();
    });

    it('answers 403 naming the required scope when the token lacks it', async () => {
      const account = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run'] });
      const response = await call(api.url, 'GET', '/config', { token: account.token });
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ detail: 'Insufficient permissions. Required scope(s): config:read' });
    });

    it('rejects an expired token with 401, also when it is cached', async () => {
      const account = await mintAccount(api.url, ROOT_KEY);
      await query(databaseUrl, `UPDATE service_accounts SET expires_at = now() + interval '2 seconds' WHERE id = $1`, [account.id]);
      // This verification caches the account with its 2-second expiry (the cache TTL is 30 s).
      expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 2100));
      const response = await call(api.url, 'GET', '/config', { token: account.token });
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ detail: 'Invalid or expired service account token' });
    });
  });

  describe('failed-lookup limit', () => {
    // Its own api process, so failures from other tests do not count against this address.
    let limited: RunningApi;
    beforeAll(async () => {
      limited = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY });
    });
    afterAll(() => limited?.stop());

    it('answers 401 for an unknown token, and 429 after 20 failed lookups from one address, counted across replicas', async () => {
      // Earlier tests of this file failed lookups from this address too: start from an empty budget.
      await query(databaseUrl, 'DELETE FROM failed_token_lookups');
      const bogus = (i: number) => `svc_pat_${'A'.repeat(40)}${i}`;
      for (let i = 0; i < 20; i += 1) {
        // Half on each replica: the budget is kept in PostgreSQL, not per process.
        const response = await call(i % 2 === 0 ? limited.url : api.url, 'GET', '/config', { token: bogus(i) });
        expect(response.status).toBe(401);
      }
      const throttled = await call(limited.url, 'GET', '/config', { token: bogus(99) });
      expect(throttled.status).toBe(429);
      expect(throttled.body).toEqual({ detail: 'Too many failed authentication attempts' });
      // A valid token is never throttled.
      const account = await mintAccount(limited.url, ROOT_KEY);
      expect((await call(limited.url, 'GET', '/config', { token: account.token })).status).toBe(200);
    });

    it('does not count throttled attempts: the window is not extended, and once it ends the budget starts afresh', async () => {
      await query(databaseUrl, 'DELETE FROM failed_token_lookups');
      const bogus = (i: number) => `svc_pat_${'B'.repeat(40)}${i}`;
      const budget = async () => query<{ points: number; expire: string }>(databaseUrl, 'SELECT points, expire FROM failed_token_lookups');
      for (let i = 0; i < 20; i += 1) {
        expect((await call(limited.url, 'GET', '/config', { token: bogus(i) })).status).toBe(401);
      }
      const [full] = await budget();
      expect(full.points).toBe(20);
      for (let i = 0; i < 5; i += 1) {
        expect((await call(limited.url, 'GET', '/config', { token: bogus(100 + i) })).status).toBe(429);
      }
      // Five throttled attempts later the stored count and the window's end are what 20 failures left.
      expect(await budget()).toEqual([full]);
      // The 60 s window ends (its stored end moved into the past, rather than waiting a minute):
      await query(databaseUrl, 'UPDATE failed_token_lookups SET expire = $1', [Date.now() - 1000]);
      // the next failure is a plain 401 again and the first of a new window.
      expect((await call(limited.url, 'GET', '/config', { token: bogus(200) })).status).toBe(401);
      expect((await budget()).map((row) => row.points)).toEqual([1]);
      for (let i = 1; i < 20; i += 1) {
        expect((await call(limited.url, 'GET', '/config', { token: bogus(200 + i) })).status).toBe(401);
      }
      expect((await call(limited.url, 'GET', '/config', { token: bogus(300) })).status).toBe(429);
    });
  });
});

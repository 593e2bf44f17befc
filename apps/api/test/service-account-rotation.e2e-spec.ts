import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { expectErrorBody, expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';

const DEFAULT_SCOPES = ['agents:run', 'teams:run', 'workflows:run', 'sessions:read', 'config:read'];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('POST /service-accounts/{id}/rotate (security_key mode, verification cache on)', () => {
  let api: RunningApi;
  let databaseUrl: string;
  const rotate = (id: string, token: string | undefined, json: unknown = {}) =>
    call(api.url, 'POST', `/service-accounts/${id}/rotate`, { token, json });
  const status = async (token: string) => (await call(api.url, 'GET', '/config', { token })).status;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    // SERVICE_ACCOUNT_CACHE_TTL_SECONDS stays at its default (30 s): every check below outlives no cache entry.
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY });
  });
  afterAll(() => api?.stop());

  it('answers the account with a new token; the old one works through the grace, then 401, even from the cache', async () => {
    const account = await mintAccount(api.url, ROOT_KEY);
    expect(await status(account.token)).toBe(200); // cached now
    await expect
      .poll(
        async () =>
          (
            await query<{ last_used_ip: string | null }>(databaseUrl, 'SELECT last_used_ip FROM service_accounts WHERE id = $1', [
              account.id,
            ])
          )[0].last_used_ip,
      )
      .toBe('127.0.0.1');
    const response = await rotate(account.id, ROOT_KEY, { grace_seconds: 3 });
    const graceEndsAt = Date.now() + 3000;
    expect(response.status, response.text).toBe(200);
    const rotated = response.body;
    expect(rotated).toEqual({
      id: account.id,
      name: account.name,
      principal: `sa:${account.name}`,
      token_prefix: rotated.token.slice(0, 15),
      scopes: DEFAULT_SCOPES,
      created_by: null,
      created_at: account.created_at,
      expires_at: account.expires_at,
      last_used_at: expect.any(Number),
      last_used_ip: '127.0.0.1',
      revoked_at: null,
      token: expect.stringMatching(/^svc_pat_[0-9A-Za-z]{40,44}$/),
    });
    expect(rotated.token).not.toBe(account.token);

    expect(await status(rotated.token)).toBe(200);
    expect(await status(account.token)).toBe(200); // cached again, with the grace's end as its expiry
    await sleep(graceEndsAt - Date.now() + 300);
    expect(await status(account.token)).toBe(401);
    expect(await status(rotated.token)).toBe(200);

    const [row] = await query<{ token_hash: string; previous_token_hash: string }>(
      databaseUrl,
      'SELECT * FROM service_accounts WHERE id = $1',
      [account.id],
    );
    expect(JSON.stringify(row)).not.toContain(rotated.token);
    const listed = await call(api.url, 'GET', '/service-accounts?limit=100', { token: ROOT_KEY });
    expect(listed.body.data.find((entry: { id: string }) => entry.id === account.id).token_prefix).toBe(rotated.token.slice(0, 15));
    expect(listed.text).not.toContain(rotated.token);
  });

  it('grace_seconds 0 ends the old token at once, although this replica had it cached', async () => {
    const account = await mintAccount(api.url, ROOT_KEY);
    expect(await status(account.token)).toBe(200);
    const rotated = await rotate(account.id, ROOT_KEY, { grace_seconds: 0 });
    expect(rotated.status).toBe(200);
    expect(await status(account.token)).toBe(401);
    expect(await status(rotated.body.token)).toBe(200);
  });

  it("defaults to an hour of grace; a second rotation ends the first one's grace", async () => {
    const account = await mintAccount(api.url, ROOT_KEY);
    const first = await rotate(account.id, ROOT_KEY);
    expect(first.status).toBe(200);
    const [row] = await query<{ seconds: number }>(
      databaseUrl,
      'SELECT extract(epoch FROM previous_token_expires_at - now())::int AS seconds FROM service_accounts WHERE id = $1',
      [account.id],
    );
    expect(Math.abs(row.seconds - 3600)).toBeLessThan(10);
    expect(await status(account.token)).toBe(200);
    const second = await rotate(account.id, ROOT_KEY, { grace_seconds: 60 });
    expect(second.status).toBe(200);
    expect(await status(account.token)).toBe(401);
    expect(await status(first.body.token)).toBe(200);
    expect(await status(second.body.token)).toBe(200);
  });

  it('takes a request without a body as the defaults; a body that is not a JSON object is a 422', async () => {
    const account = await mintAccount(api.url, ROOT_KEY);
    const bare = await call(api.url, 'POST', `/service-accounts/${account.id}/rotate`, { token: ROOT_KEY });
    expect(bare.status, bare.text).toBe(200);
    expect(await status(account.token)).toBe(200);
    for (const body of [[], 'x', 7]) {
      expect(expectValidationBody(await rotate(account.id, ROOT_KEY, body)), JSON.stringify(body)).toEqual([['body']]);
    }
    // Declaring JSON and sending nothing is no body, as on every route: the defaults again.
    const empty = await call(api.url, 'POST', `/service-accounts/${account.id}/rotate`, {
      token: ROOT_KEY,
      raw: { body: '', contentType: 'application/json' },
    });
    expect(empty.status, empty.text).toBe(200);
    const nul = await call(api.url, 'POST', `/service-accounts/${account.id}/rotate`, {
      token: ROOT_KEY,
      raw: { body: '{"grace_seconds": "1\\u0000"}', contentType: 'application/json' },
    });
    expect(expectValidationBody(nul)).toEqual([['body', 'grace_seconds']]);
    expect(await status(bare.body.token)).toBe(200);
  });

  it('rejects grace_seconds outside 0..86400 or not an integer with the 422 body', async () => {
    const account = await mintAccount(api.url, ROOT_KEY);
    for (const grace of [-1, 86_401, 1.5, 'soon', null]) {
      const response = await rotate(account.id, ROOT_KEY, { grace_seconds: grace });
      expect(expectValidationBody(response), String(grace)).toEqual([['body', 'grace_seconds']]);
    }
    expectErrorBody(await rotate('not-a-uuid', ROOT_KEY), 404);
    expect(await status(account.token)).toBe(200);
  });

  it('rejects a field the body does not take, so that a misspelt grace cannot rotate with the default hour', async () => {
    const account = await mintAccount(api.url, ROOT_KEY);
    const response = await rotate(account.id, ROOT_KEY, { grace: 0 });
    expect(expectValidationBody(response)).toEqual([['body', 'grace']]);
    expect(response.body.detail[0].type).toBe('extra_forbidden');
    expect(await status(account.token)).toBe(200);
  });

  it('answers 404 for an id that names nothing, and 409 for a revoked or expired account', async () => {
    const missing = await rotate('00000000-0000-4000-8000-000000000000', ROOT_KEY);
    expectErrorBody(missing, 404);

    const revoked = await mintAccount(api.url, ROOT_KEY);
    await call(api.url, 'DELETE', `/service-accounts/${revoked.id}`, { token: ROOT_KEY });
    const conflict = await rotate(revoked.id, ROOT_KEY);
    expectErrorBody(conflict, 409);
    expect(conflict.body.detail).toContain('is revoked');

    const expired = await mintAccount(api.url, ROOT_KEY);
    await query(databaseUrl, `UPDATE service_accounts SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);
    const late = await rotate(expired.id, ROOT_KEY);
    expectErrorBody(late, 409);
    expect(late.body.detail).toContain('is expired');
    expect(await status(expired.token)).toBe(401);
  });

  it("refuses the wrong principals: anonymous 401, no service_accounts:write 403, another minter's account 404 as revoke does", async () => {
    const target = await mintAccount(api.url, ROOT_KEY);
    expectErrorBody(await rotate(target.id, undefined), 401);

    const plain = await mintAccount(api.url, ROOT_KEY);
    const forbidden = await rotate(target.id, plain.token);
    expectErrorBody(forbidden, 403);
    expect(forbidden.body.detail).toBe('Insufficient permissions. Required scope(s): service_accounts:write');

    const minter = await mintAccount(api.url, ROOT_KEY, { scopes: ['service_accounts:write', 'config:read'], privileged: true });
    expectErrorBody(await call(api.url, 'DELETE', `/service-accounts/${target.id}`, { token: minter.token }), 404);
    expectErrorBody(await rotate(target.id, minter.token), 404);
    expect(await status(target.token)).toBe(200);

    // Its own child: visible to it, as for revoke, and the new token carries only scopes the minter holds.
    const child = await mintAccount(api.url, minter.token, { scopes: ['config:read'] });
    const own = await rotate(child.id, minter.token, { grace_seconds: 0 });
    expect(own.status, own.text).toBe(200);
    expect(own.body.scopes).toEqual(['config:read']);
    expect(await status(own.body.token)).toBe(200);
    expect(await status(child.token)).toBe(401);
  });

  it('records last_used_ip with last_used_at; null until used', async () => {
    const account = await mintAccount(api.url, ROOT_KEY);
    expect(account.last_used_ip).toBeNull();
    expect(await status(account.token)).toBe(200);
    const listed = async () =>
      (await call(api.url, 'GET', '/service-accounts?limit=100', { token: ROOT_KEY })).body.data.find(
        (entry: { id: string }) => entry.id === account.id,
      );
    await expect.poll(async () => (await listed()).last_used_ip).toBe('127.0.0.1');
    expect((await listed()).last_used_at).toEqual(expect.any(Number));
  });
});

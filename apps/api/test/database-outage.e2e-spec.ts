import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

describe('database unreachable', () => {
  let api: RunningApi;
  let proxy: TcpProxy;
  let account: { token: string };

  beforeAll(async () => {
    const url = new URL(await createTestDatabase());
    proxy = new TcpProxy(url.hostname, Number(url.port));
    url.port = String(await proxy.listen());
    api = await startApi({
      DATABASE_URL: url.toString(),
      OS_SECURITY_KEY: ROOT_KEY,
      SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '0',
      DEMO_COMPONENTS: 'true',
    });
    account = await mintAccount(api.url, ROOT_KEY);
    await proxy.cut();
  });
  afterAll(() => api?.stop());

  it('answers 503 to a token that cannot be verified, failing closed', async () => {
    const response = await call(api.url, 'GET', '/config', { token: account.token });
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ detail: 'Authentication is temporarily unavailable' });
  });

  it('answers 503 with the standard body on service-account routes', async () => {
    for (const [method, path, json] of [
      ['GET', '/service-accounts', undefined],
      ['POST', '/service-accounts', { name: 'during-outage' }],
      ['DELETE', '/service-accounts/00000000-0000-4000-8000-000000000000', undefined],
    ] as const) {
      const response = await call(api.url, method, path, { token: ROOT_KEY, json });
      expect(response.status, `${method} ${path}`).toBe(503);
      expect(response.body).toEqual({ detail: 'Database unavailable; try again shortly' });
    }
  });

  it('answers A2A with a refusal a client retries: an internal error saying so over JSON-RPC, 503 UNAVAILABLE over HTTP+JSON', async () => {
    const message = { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hello' }] };
    const headers = { 'a2a-version': '1.0' };
    const rpc = { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } };
    const overRpc = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: rpc, token: ROOT_KEY, headers });
    expect(overRpc.body).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32603, message: 'Database unavailable; try again shortly' },
    });
    const v03 = { jsonrpc: '2.0', id: 2, method: 'message/send', params: { message: { ...message, kind: 'message', role: 'user' } } };
    const overV03 = await call(api.url, 'POST', '/a2a/agents/echo-agent', {
      json: { ...v03, params: { message: { ...v03.params.message, parts: [{ kind: 'text', text: 'hello' }] } } },
      token: ROOT_KEY,
    });
    expect(overV03.body).toMatchObject({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32603, message: 'Database unavailable; try again shortly' },
    });
    for (const path of ['/a2a/agents/echo-agent/message:send', '/a2a/agents/echo-agent/tasks/00000000-0000-4000-8000-000000000000']) {
      const overRest = path.endsWith(':send')
        ? await call(api.url, 'POST', path, { json: { message }, token: ROOT_KEY, headers })
        : await call(api.url, 'GET', path, { token: ROOT_KEY, headers });
      expect(overRest.status, path).toBe(503);
      expect(overRest.body.error, path).toMatchObject({
        code: 503,
        status: 'UNAVAILABLE',
        message: 'Database unavailable; try again shortly',
      });
    }
  });

  it("still serves this process's own metrics, without the figures that come from the database", async () => {
    const scrape = await call(api.url, 'GET', '/metrics', { token: ROOT_KEY });
    expect(scrape.status).toBe(200);
    expect(scrape.text).toMatch(/^http_request_duration_seconds_bucket\{/m);
    expect(scrape.text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(scrape.text).not.toMatch(/^queue_jobs\{/m);
  });

  it('stays alive: /health still answers', async () => {
    expect((await call(api.url, 'GET', '/health')).status).toBe(200);
  });
});

describe('database failed over to a standby not yet promoted (read-only)', () => {
  let api: RunningApi;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    // Every new transaction of the api's connections now refuses to write, as a standby does.
    await query(databaseUrl, `ALTER DATABASE "${new URL(databaseUrl).pathname.slice(1)}" SET default_transaction_read_only = on`);
    await query(
      databaseUrl,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
  });
  afterAll(() => api?.stop());

  it('answers writes 503, a refusal that passes, not 500, and reads as usual', async () => {
    for (const [method, path, json] of [
      ['POST', '/service-accounts', { name: 'during-failover' }],
      ['POST', '/agents/echo-agent/runs', { message: 'hi', background: true }],
      ['POST', '/memories', { memory: 'likes tea' }],
    ] as const) {
      const response = await call(api.url, method, path, { token: ROOT_KEY, json });
      expect(response.status, `${method} ${path}: ${response.text}`).toBe(503);
      expect(response.body).toEqual({ detail: 'Database unavailable; try again shortly' });
    }
    expect((await call(api.url, 'GET', '/service-accounts', { token: ROOT_KEY })).status).toBe(200);
  });
});

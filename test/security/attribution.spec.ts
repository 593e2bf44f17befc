import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../support/database';
import { expectErrorBody } from '../support/error-bodies';
import { call } from '../support/http';
import { callTool, connectMcp } from '../support/mcp';
import { JWT_SECRET, mintAccount, MintedAccount, ROOT_KEY, signJwt, uniqueName } from '../support/principals';
import { RunningApi, startApi } from '../support/processes';

/**
 * Threat model, attribution: `user_id` in a request names whose data a row becomes. Only callers
 * without an identity of their own (the security key, anonymous on an open instance) and admins may
 * name someone; only an admin or the key may name a service account.
 */
describe('security: attribution (real api, JWT and security key)', () => {
  let api: RunningApi;
  let ci: MintedAccount;

  beforeAll(async () => {
    api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      JWT_SECRET,
      DEMO_COMPONENTS: 'true',
      MCP_ENABLED: 'true',
    });
    ci = await mintAccount(api.url, ROOT_KEY, { name: uniqueName('ci') });
  });
  afterAll(() => api?.stop());

  const ciPrincipal = () => `sa:${ci.name}`;
  const runAs = (token: string | undefined, json: Record<string, unknown>, baseUrl = api.url) =>
    call(baseUrl, 'POST', '/agents/echo-agent/runs', { token, json: { message: 'hi', ...json } });
  const sessionsOf = async (token: string) =>
    (await call(api.url, 'GET', '/sessions?limit=100', { token })).body.data as { session_id: string; user_id: string }[];

  it('a JWT caller cannot attribute a run to a service account with user_id=sa:<name>', async () => {
    const mallory = await signJwt({ sub: 'mallory', scopes: ['agents:run'] });
    const forged = await runAs(mallory, { user_id: ciPrincipal(), message: 'forged turn' });
    expect(forged.status, forged.text).toBe(200);
    expect(forged.body.user_id).toBe('mallory');
    // The service account never sees the forged turn among its sessions.
    expect((await sessionsOf(ci.token)).map((session) => session.session_id)).not.toContain(forged.body.session_id);
    // Positive control: the account's own run is listed.
    const own = await runAs(ci.token, {});
    expect((await sessionsOf(ci.token)).map((session) => session.session_id)).toContain(own.body.session_id);
  });

  it('a JWT caller cannot add a turn to a service account’s session', async () => {
    const own = await runAs(ci.token, { message: 'mine' });
    const mallory = await signJwt({ sub: 'mallory', scopes: ['agents:run'] });
    expectErrorBody(await runAs(mallory, { session_id: own.body.session_id, message: 'injected' }), 404);
    expectErrorBody(await runAs(mallory, { session_id: own.body.session_id, user_id: ciPrincipal(), message: 'injected' }), 404);
    const runs = (await call(api.url, 'GET', `/sessions/${own.body.session_id}/runs`, { token: ci.token })).body.data as {
      message?: string;
      content: string;
    }[];
    expect(runs.map((run) => run.content)).toEqual(['mine']);
    // Positive control: the owner continues its own session.
    expect((await runAs(ci.token, { session_id: own.body.session_id, message: 'again' })).status).toBe(200);
  });

  it('a JWT user without platform:admin cannot act for another user', async () => {
    const bob = await signJwt({ sub: 'bob', scopes: ['agents:run', 'schedules:write'] });
    expect((await runAs(bob, { user_id: 'alice' })).body.user_id).toBe('bob');
    const schedule = await call(api.url, 'POST', '/schedules', {
      token: bob,
      json: { name: uniqueName('s'), cron_expr: '0 0 1 1 *', method: 'GET', endpoint: '/health', user_id: 'alice' },
    });
    expect(schedule.status, schedule.text).toBe(201);
    expect(schedule.body.user_id).toBe('bob');
  });

  it('a token caller’s runs are its own, whatever user_id says', async () => {
    const other = await mintAccount(api.url, ROOT_KEY);
    expect((await runAs(other.token, { user_id: ciPrincipal() })).body.user_id).toBe(`sa:${other.name}`);
    expect((await runAs(other.token, { user_id: 'alice' })).body.user_id).toBe(`sa:${other.name}`);
  });

  it('admins and the security key may act for others, service accounts included', async () => {
    const admin = await signJwt({ sub: 'ops', scopes: ['platform:admin'] });
    expect((await runAs(admin, { user_id: ciPrincipal() })).body.user_id).toBe(ciPrincipal());
    expect((await runAs(ROOT_KEY, { user_id: ciPrincipal() })).body.user_id).toBe(ciPrincipal());
    expect((await runAs(ROOT_KEY, { user_id: 'alice' })).body.user_id).toBe('alice');
  });

  it('the MCP run tools apply the same attribution', async () => {
    const mallory = await signJwt({ sub: 'mallory-mcp', scopes: ['agents:run'] });
    const client = await connectMcp(api.url, mallory);
    try {
      const result = await callTool(client, 'run_agent', { agent_id: 'echo-agent', message: 'via mcp', user_id: ciPrincipal() });
      expect(result.isError, result.text).toBe(false);
      expect(JSON.parse(result.text).user_id).toBe('mallory-mcp');
    } finally {
      await client.close();
    }
  });

  describe('on an open instance (no auth configured)', () => {
    let open: RunningApi;
    beforeAll(async () => {
      open = await startApi({ DATABASE_URL: await createTestDatabase(), DEMO_COMPONENTS: 'true' });
    });
    afterAll(() => open?.stop());

    it('an anonymous caller cannot act as a service account', async () => {
      const refused = await runAs(undefined, { user_id: 'sa:ci' }, open.url);
      expectErrorBody(refused, 403);
      expect(refused.body.detail).toContain('platform:admin');
      const schedule = await call(open.url, 'POST', '/schedules', {
        json: { name: uniqueName('s'), cron_expr: '0 0 1 1 *', method: 'GET', endpoint: '/health', user_id: 'sa:ci' },
      });
      expectErrorBody(schedule, 403);
      // Positive control: naming a plain user is what an open instance allows.
      expect((await runAs(undefined, { user_id: 'alice' }, open.url)).body.user_id).toBe('alice');
    });
  });
});

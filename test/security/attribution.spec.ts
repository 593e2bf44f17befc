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

  it('with user isolation off a JWT user sees others’ runs, sessions and memories but cannot cancel, edit or delete them', async () => {
    const scopes = ['agents:run', 'sessions:read', 'sessions:delete', 'memories:read', 'memories:write', 'memories:delete'];
    const [alice, bob] = await Promise.all([signJwt({ sub: 'alice-shared', scopes }), signJwt({ sub: 'bob-shared', scopes })]);
    const run = await call(api.url, 'POST', '/agents/sleep-agent/runs', { token: alice, json: { message: '30', background: true } });
    expect(run.status, run.text).toBe(202);
    const memory = await call(api.url, 'POST', '/memories', { token: alice, json: { memory: 'likes tea' } });
    expect(memory.status, memory.text).toBe(201);
    const runPath = `/agents/sleep-agent/runs/${run.body.run_id}`;
    const memoryPath = `/memories/${memory.body.memory_id}`;
    const sessionPath = `/sessions/${run.body.session_id}`;

    // Bob sees them (isolation is off)...
    for (const path of [runPath, memoryPath, sessionPath]) {
      expect((await call(api.url, 'GET', path, { token: bob })).status, path).toBe(200);
    }
    // ...and changes none of them, over REST or MCP.
    for (const [method, path, json] of [
      ['POST', `${runPath}/cancel`, undefined],
      ['PATCH', memoryPath, { memory: 'likes coffee' }],
      ['DELETE', memoryPath, undefined],
      ['DELETE', sessionPath, undefined],
    ] as const) {
      const refused = await call(api.url, method, path, { token: bob, json });
      expectErrorBody(refused, 403);
      expect(refused.body.detail, `${method} ${path}`).toMatch(
        /belongs to another principal: only its owner or an admin \(platform:admin\)/,
      );
    }
    const client = await connectMcp(api.url, bob);
    try {
      for (const [tool, args] of [
        ['update_memory', { memory_id: memory.body.memory_id, memory: 'likes coffee' }],
        ['delete_memory', { memory_id: memory.body.memory_id }],
        ['cancel_agent_run', { agent_id: 'sleep-agent', run_id: run.body.run_id }],
      ] as const) {
        const refused = await callTool(client, tool, args);
        expect(refused.isError, tool).toBe(true);
        expect(refused.text, tool).toMatch(/belongs to another principal/);
      }
    } finally {
      await client.close();
    }
    expect((await call(api.url, 'GET', memoryPath, { token: alice })).body.memory).toBe('likes tea');
    expect((await call(api.url, 'GET', runPath, { token: alice })).body.status).toMatch(/^(queued|running)$/);

    // Positive controls: the owner cancels its run and edits its memory; an admin deletes the session.
    expect((await call(api.url, 'POST', `${runPath}/cancel`, { token: alice })).status).toBe(200);
    expect((await call(api.url, 'PATCH', memoryPath, { token: alice, json: { memory: 'likes coffee' } })).body.memory).toBe('likes coffee');
    const admin = await signJwt({ sub: 'ops', scopes: ['platform:admin'] });
    await expect.poll(async () => (await call(api.url, 'GET', runPath, { token: alice })).body.status).toBe('cancelled');
    expect((await call(api.url, 'DELETE', sessionPath, { token: admin })).status).toBe(204);
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

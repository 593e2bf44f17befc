import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../support/database';
import { expectErrorBody, expectValidationBody } from '../support/error-bodies';
import { call } from '../support/http';
import { callTool, connectMcp, INITIALIZE_REQUEST, MCP_HEADERS } from '../support/mcp';
import { JWT_SECRET, mintAccount, ROOT_KEY, signJwt, uniqueName } from '../support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../support/processes';
import { TcpProxy } from '../support/tcp-proxy';

/** A slot that never comes on its own during a test: fires happen only when a test triggers one. */
const YEARLY = '0 0 1 1 *';
const FINAL = ['success', 'failed', 'skipped'];

const expiresAtOf = (seconds: number) => Math.floor(Date.now() / 1000) + seconds;

/**
 * Threat model, schedules: a schedule is a stored credential that acts later. Whoever may write
 * schedules must not borrow the rights of whoever wrote one before, a fire's credential must open
 * exactly its own call, and a schedule must never act with more than its owner holds now.
 */
describe('security: schedule authority (real api, real worker, JWT and security key)', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let proxy: TcpProxy;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      JWT_SECRET,
      DEMO_COMPONENTS: 'true',
      MCP_ENABLED: 'true',
      SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '0',
    });
    // The worker reaches the api through a proxy that keeps every byte it sent: what an eavesdropper sees.
    proxy = new TcpProxy('127.0.0.1', Number(new URL(api.url).port));
    const proxyUrl = `http://127.0.0.1:${await proxy.listen()}`;
    worker = await startWorker({
      DATABASE_URL: databaseUrl,
      PUBLIC_URL: proxyUrl,
      SCHEDULE_TICK_INTERVAL_MS: '200',
      DEMO_COMPONENTS: 'true',
    });
  });
  afterAll(async () => {
    await worker?.stop();
    await proxy?.cut();
    await api?.stop();
  });

  const createAs = (token: string, json: Record<string, unknown>) =>
    call(api.url, 'POST', '/schedules', { token, json: { name: uniqueName('sec'), cron_expr: YEARLY, method: 'GET', ...json } });

  async function createOk(token: string, json: Record<string, unknown>): Promise<{ id: string }> {
    const response = await createAs(token, json);
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async function triggeredFire(
    scheduleId: string,
  ): Promise<{ status: string; status_code: number | null; error: string | null; attempts: unknown[] }> {
    const before = (await call(api.url, 'GET', `/schedules/${scheduleId}/runs?limit=100`, { token: ROOT_KEY })).body.data.length;
    expect((await call(api.url, 'POST', `/schedules/${scheduleId}/trigger`, { token: ROOT_KEY })).status).toBe(202);
    let fires: { status: string }[] = [];
    await waitFor(
      async () => {
        fires = (await call(api.url, 'GET', `/schedules/${scheduleId}/runs?limit=100&sort_order=asc`, { token: ROOT_KEY })).body.data;
        return fires.length > before && FINAL.includes(fires[fires.length - 1].status);
      },
      20_000,
      `a fire of ${scheduleId}`,
    );
    return fires[fires.length - 1] as never;
  }

  const schedule = async (id: string) => (await call(api.url, 'GET', `/schedules/${id}`, { token: ROOT_KEY })).body;

  it('a schedules:write user cannot repoint the security key’s schedule at DELETE /service-accounts/{id}', async () => {
    const victim = await mintAccount(api.url, ROOT_KEY);
    const keySchedule = await createOk(ROOT_KEY, { endpoint: '/health' });
    const mallory = await signJwt({ sub: 'mallory', scopes: ['schedules:read', 'schedules:write', 'schedules:delete'] });

    // Mallory can see it (user isolation is off), but changing, triggering or deleting another principal's schedule needs the admin scope.
    expect((await call(api.url, 'GET', `/schedules/${keySchedule.id}`, { token: mallory })).status).toBe(200);
    const patched = await call(api.url, 'PATCH', `/schedules/${keySchedule.id}`, {
      token: mallory,
      json: { method: 'DELETE', endpoint: `/service-accounts/${victim.id}` },
    });
    expectErrorBody(patched, 403);
    expect(patched.body.detail).toContain('platform:admin');
    expectErrorBody(await call(api.url, 'POST', `/schedules/${keySchedule.id}/trigger`, { token: mallory }), 403);
    expectErrorBody(await call(api.url, 'DELETE', `/schedules/${keySchedule.id}`, { token: mallory }), 403);
    // Her own schedule aimed at the account is refused too: she may not make that call herself.
    const own = await createAs(mallory, { method: 'DELETE', endpoint: `/service-accounts/${victim.id}` });
    expectErrorBody(own, 403);
    expect(own.body.detail).toContain('service_accounts:write');

    expect(await schedule(keySchedule.id)).toMatchObject({ method: 'GET', endpoint: '/health' });
    expect((await call(api.url, 'GET', '/config', { token: victim.token })).status).toBe(200);
    // Positive control: an admin may change it.
    const admin = await signJwt({ sub: 'root-admin', scopes: ['platform:admin'] });
    expect((await call(api.url, 'PATCH', `/schedules/${keySchedule.id}`, { token: admin, json: { description: 'checked' } })).status).toBe(
      200,
    );
  });

  it('its owner triggers a schedule only with a credential that may make its call now, over REST and MCP', async () => {
    const broad = await signJwt({ sub: 'alice-trigger', scopes: ['schedules:read', 'schedules:write', 'agents:run'] });
    const created = await createOk(broad, { method: 'POST', endpoint: '/agents/echo-agent/runs', payload: { message: 'tick' } });
    // The same user with a narrower token: she owns the schedule, but may not run the agent herself.
    const narrow = await signJwt({ sub: 'alice-trigger', scopes: ['schedules:read', 'schedules:write'] });
    expectErrorBody(await call(api.url, 'POST', '/agents/echo-agent/runs', { token: narrow, json: { message: 'direct' } }), 403);
    const refused = await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: narrow });
    expectErrorBody(refused, 403);
    expect(refused.body.detail).toContain('agents:echo-agent:run');
    const mcp = await connectMcp(api.url, narrow);
    try {
      const tool = await callTool(mcp, 'trigger_schedule', { schedule_id: created.id });
      expect(tool.isError).toBe(true);
      expect(tool.text).toContain('agents:echo-agent:run');
    } finally {
      await mcp.close();
    }
    expect((await call(api.url, 'GET', `/schedules/${created.id}/runs`, { token: ROOT_KEY })).body.data).toEqual([]);
    // Positive control: with the token that may make the call, her trigger fires.
    expect((await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: broad })).status).toBe(202);
    await waitFor(
      async () =>
        (await call(api.url, 'GET', `/schedules/${created.id}/runs`, { token: ROOT_KEY })).body.data.some(
          (fire: { status: string }) => fire.status === 'success',
        ),
      20_000,
      'the owner’s fire',
    );
  });

  it('a fire’s credential captured in transit opens no route but its own call', async () => {
    const victim = await mintAccount(api.url, ROOT_KEY);
    const created = await createOk(ROOT_KEY, { endpoint: '/config' });
    expect(await triggeredFire(created.id)).toMatchObject({ status: 'success', status_code: 200 });
    const captured = [...proxy.received().matchAll(/authorization: Bearer (svc_sch_\S+)/gi)].map((match) => match[1]);
    const credential = captured.find((token) => token.startsWith(`svc_sch_${created.id}.`));
    expect(credential, 'the worker sent a schedule credential over the wire').toBeDefined();

    // Replayed on its own call it still works (within its expiry): the refusals below are about the call.
    expect((await call(api.url, 'GET', '/config', { token: credential })).status).toBe(200);
    for (const [method, path] of [
      ['GET', '/service-accounts'],
      ['DELETE', `/service-accounts/${victim.id}`],
      ['GET', '/config?other=1'],
      ['POST', '/schedules'],
      ['GET', '/queue/jobs'],
    ]) {
      const response = await call(api.url, method, path, { token: credential, json: method === 'POST' ? {} : undefined });
      expectErrorBody(response, 401);
    }
    const mcp = await call(api.url, 'POST', '/mcp', { token: credential, json: INITIALIZE_REQUEST, headers: MCP_HEADERS });
    expectErrorBody(mcp, 401);
    expect((await call(api.url, 'GET', '/config', { token: victim.token })).status).toBe(200);
  });

  it('a schedule acts with no more than its owning service account holds now', async () => {
    const owner = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run', 'schedules:write', 'schedules:read'], privileged: true });
    const created = await createOk(owner.token, { method: 'POST', endpoint: '/agents/echo-agent/runs', payload: { message: 'tick' } });
    expect(await triggeredFire(created.id)).toMatchObject({ status: 'success' });

    await query(
      databaseUrl,
      `UPDATE service_accounts SET scopes = ARRAY['agents:sleep-agent:run', 'schedules:write', 'schedules:read'] WHERE id = $1`,
      [owner.id],
    );
    const fire = await triggeredFire(created.id);
    expect(fire).toMatchObject({ status: 'failed', status_code: 403 });
    expect(await schedule(created.id)).toMatchObject({
      enabled: false,
      next_run_at: null,
      disabled_reason: 'owner_lacks_scope:agents:echo-agent:run',
    });
  });

  it('whoever changes a schedule owns it: it fires with the new owner’s rights, and the old owner may no longer change it', async () => {
    const owner = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read', 'schedules:write', 'schedules:read'], privileged: true });
    const created = await createOk(owner.token, { endpoint: '/config' });
    // Its owner cannot point it at a route it may not call...
    expectErrorBody(
      await call(api.url, 'PATCH', `/schedules/${created.id}`, { token: owner.token, json: { endpoint: '/service-accounts' } }),
      403,
    );
    // ...the security key can, and the schedule then acts with the key's rights.
    expect(
      (await call(api.url, 'PATCH', `/schedules/${created.id}`, { token: ROOT_KEY, json: { endpoint: '/service-accounts' } })).status,
    ).toBe(200);
    expect(await triggeredFire(created.id)).toMatchObject({ status: 'success', status_code: 200 });
    const taken = await call(api.url, 'PATCH', `/schedules/${created.id}`, { token: owner.token, json: { description: 'mine again?' } });
    expectErrorBody(taken, 403);
    expect(taken.body.detail).toContain('platform:admin');
  });

  it('an admin who pauses, resumes or renames a schedule lends it nothing: revoking its owner still stops it', async () => {
    const owner = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read', 'schedules:write', 'schedules:read'], privileged: true });
    const created = await createOk(owner.token, { endpoint: '/config' });
    for (const json of [{ enabled: false }, { enabled: true }, { name: uniqueName('renamed'), cron_expr: '0 0 2 1 *' }]) {
      expect((await call(api.url, 'PATCH', `/schedules/${created.id}`, { token: ROOT_KEY, json })).status).toBe(200);
    }
    // Still the owner's: it may change the schedule without the admin scope.
    expect(
      (await call(api.url, 'PATCH', `/schedules/${created.id}`, { token: owner.token, json: { description: 'still mine' } })).status,
    ).toBe(200);

    expect((await call(api.url, 'DELETE', `/service-accounts/${owner.id}`, { token: ROOT_KEY })).status).toBe(200);
    // Disabled by the revoke itself: a trigger is refused, it fires nothing.
    expect(await schedule(created.id)).toMatchObject({ enabled: false, disabled_reason: expect.stringMatching(/^owner_revoked:sa:/) });
    expectErrorBody(await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY }), 409);

    // Resuming it as it is would only see it disabled again at its next slot: refused, saying how to take it over.
    const resumed = await call(api.url, 'PATCH', `/schedules/${created.id}`, { token: ROOT_KEY, json: { enabled: true } });
    expectErrorBody(resumed, 409);
    expect(resumed.body.detail).toContain('send its method, endpoint or payload');
    const taken = await call(api.url, 'PATCH', `/schedules/${created.id}`, {
      token: ROOT_KEY,
      json: { endpoint: '/config', enabled: true },
    });
    expect(taken.status, taken.text).toBe(200);
    expect(await triggeredFire(created.id)).toMatchObject({ status: 'success', status_code: 200 });
  });

  it('a fire never attributes its run to anyone but the owner, even after an admin rewrote its call and so owns it', async () => {
    const writer = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run', 'schedules:write', 'schedules:read'], privileged: true });
    const created = await createOk(writer.token, {
      method: 'POST',
      endpoint: '/agents/echo-agent/runs',
      payload: { message: 'planted', user_id: 'sa:someone-else' },
    });
    // Writing the call, even unchanged, is what makes it the admin's.
    const rewritten = await call(api.url, 'PATCH', `/schedules/${created.id}`, {
      token: ROOT_KEY,
      json: { endpoint: '/agents/echo-agent/runs' },
    });
    expect(rewritten.status).toBe(200);
    const fire = await triggeredFire(created.id);
    expect(fire, JSON.stringify(fire)).toMatchObject({ status: 'success' });
    const [run] = await query<{ user_id: string | null }>(databaseUrl, `SELECT user_id FROM runs WHERE message = 'planted'`);
    expect(run).toEqual({ user_id: null });
  });

  it('a schedule cannot call the schedule routes, however the path is spelled', async () => {
    const target = await createOk(ROOT_KEY, { endpoint: '/health' });
    const spellings = [
      '/schedules',
      `/schedules/${target.id}/trigger`,
      `//schedules/${target.id}/trigger`,
      `/agents/../schedules/${target.id}/trigger`,
      `/%73chedules/${target.id}`,
      '/Schedules',
    ];
    for (const endpoint of spellings) {
      expect(expectValidationBody(await createAs(ROOT_KEY, { method: 'POST', endpoint })), endpoint).toEqual([['body', 'endpoint']]);
      expect(
        expectValidationBody(await call(api.url, 'PATCH', `/schedules/${target.id}`, { token: ROOT_KEY, json: { endpoint } })),
        endpoint,
      ).toEqual([['body', 'endpoint']]);
    }
    expect(await schedule(target.id)).toMatchObject({ endpoint: '/health' });
  });

  it('a schedule aimed at A2A JSON-RPC needs the scope of the method its payload calls, at create and PATCH', async () => {
    const alice = await signJwt({ sub: 'alice-a2a', scopes: ['schedules:write', 'schedules:read', 'agents:echo-agent:run'] });
    // A fire sends no A2A-Version header, so it speaks v0.3: the methods go by their v0.3 names.
    const send = {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'by schedule' }] } },
    };
    const refused = await createAs(alice, { method: 'POST', endpoint: '/a2a/agents/sleep-agent', payload: send });
    expectErrorBody(refused, 403);
    expect(refused.body.detail).toContain('Required scope(s): agents:run or agents:sleep-agent:run');
    const v1 = await createAs(alice, { method: 'POST', endpoint: '/a2a/agents/echo-agent', payload: { ...send, method: 'SendMessage' } });
    expect(expectValidationBody(v1)).toEqual([['body', 'endpoint']]);
    expect(v1.text).toContain('speaks A2A v0.3');
    const streamed = await createAs(alice, {
      method: 'POST',
      endpoint: '/a2a/agents/echo-agent',
      payload: { ...send, method: 'message/stream' },
    });
    expect(expectValidationBody(streamed)).toEqual([['body', 'endpoint']]);
    expect(streamed.text).toContain('reads one answer, not a stream');
    const getTask = { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: '00000000-0000-4000-8000-000000000000' } };
    const reading = await createAs(alice, { method: 'POST', endpoint: '/a2a/agents/echo-agent', payload: getTask });
    expectErrorBody(reading, 403);
    expect(reading.body.detail).toContain('agents:read or agents:echo-agent:read');
    // Positive control: the method her token may call; a PATCH pointing it elsewhere is checked the same way.
    const allowed = await createOk(alice, { method: 'POST', endpoint: '/a2a/agents/echo-agent', payload: send });
    expectErrorBody(
      await call(api.url, 'PATCH', `/schedules/${allowed.id}`, { token: alice, json: { endpoint: '/a2a/agents/sleep-agent' } }),
      403,
    );
    expectErrorBody(await call(api.url, 'PATCH', `/schedules/${allowed.id}`, { token: alice, json: { payload: getTask } }), 403);
    expect(await triggeredFire(allowed.id)).toMatchObject({ status: 'success', status_code: 200 });
    // A JSON-RPC error answered with a 200 (no such task) is a failed fire, not a success.
    const missing = await createOk(ROOT_KEY, { method: 'POST', endpoint: '/a2a/agents/echo-agent', payload: getTask });
    expect(await triggeredFire(missing.id)).toMatchObject({
      status: 'failed',
      status_code: 200,
      error: expect.stringMatching(/^JSON-RPC error -32001: /),
    });
  });

  it('a schedule cannot call what a fire cannot use: /mcp, A2A’s HTTP+JSON binding, minting or rotating a token, a malformed escape (422)', async () => {
    const call_ = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_config', arguments: {} } };
    for (const endpoint of ['/mcp', '/./mcp', '/mcp?x=1']) {
      const refused = await createAs(ROOT_KEY, { method: 'POST', endpoint, payload: call_ });
      expect(expectValidationBody(refused), endpoint).toEqual([['body', 'endpoint']]);
      expect(refused.text).toContain('schedule the REST route the MCP tool mirrors');
    }
    // A2A's HTTP+JSON binding wants an A2A-Version header a fire does not send; its JSON-RPC URL works.
    for (const [method, endpoint] of [
      ['POST', '/a2a/agents/echo-agent/message:send'],
      ['GET', '/a2a/agents/echo-agent/tasks/00000000-0000-4000-8000-000000000000'],
    ]) {
      const refused = await createAs(ROOT_KEY, { method, endpoint, payload: {} });
      expect(expectValidationBody(refused), endpoint).toEqual([['body', 'endpoint']]);
      expect(refused.text).toContain("A schedule cannot call A2A's HTTP+JSON binding");
    }
    // A route that answers a new token: the fire would lose it, and a rotation would end the token in use.
    for (const endpoint of ['/service-accounts', '/service-accounts/00000000-0000-4000-8000-000000000000/rotate']) {
      const refused = await createAs(ROOT_KEY, { method: 'POST', endpoint, payload: { name: 'lost-token' } });
      expect(expectValidationBody(refused), endpoint).toEqual([['body', 'endpoint']]);
      expect(refused.text).toContain('A schedule cannot call a route that hands out a credential');
    }
    // A malformed escape is a 400 before any route: every fire would fail.
    for (const endpoint of ['/agents/%zz/runs', '/agents/%FF/runs', '/%']) {
      expect(expectValidationBody(await createAs(ROOT_KEY, { method: 'POST', endpoint })), endpoint).toEqual([['body', 'endpoint']]);
    }
    const target = await createOk(ROOT_KEY, { endpoint: '/config' });
    const patched = await call(api.url, 'PATCH', `/schedules/${target.id}`, {
      token: ROOT_KEY,
      json: { method: 'POST', endpoint: '/mcp' },
    });
    expect(expectValidationBody(patched)).toEqual([['body', 'endpoint']]);
    expect(await schedule(target.id)).toMatchObject({ method: 'GET', endpoint: '/config' });
  });

  it('a schedule stored before its call was refused (/mcp, an A2A v1.0 method) is disabled at its first fire; a forged fire disables nothing', async () => {
    const victim = await createOk(ROOT_KEY, { endpoint: '/health' });
    const send = { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { role: 'ROLE_USER', parts: [{ text: 'hi' }] } } };
    const stored = [
      {
        method: 'POST',
        endpoint: '/mcp',
        payload: {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'delete_schedule', arguments: { schedule_id: victim.id } },
        },
        refusal: 'A schedule cannot call /mcp',
      },
      { method: 'POST', endpoint: '/a2a/agents/echo-agent', payload: send, refusal: 'speaks A2A v0.3' },
      { method: 'POST', endpoint: '/service-accounts', payload: { name: 'minted-by-a-fire' }, refusal: 'hands out a credential' },
    ];
    for (const { method, endpoint, payload, refusal } of stored) {
      const old = await createOk(ROOT_KEY, { endpoint: '/health' });
      await query(databaseUrl, `UPDATE schedules SET method = $2, endpoint = $3, payload = $4 WHERE id = $1`, [
        old.id,
        method,
        endpoint,
        JSON.stringify(payload),
      ]);
      const fire = await triggeredFire(old.id);
      expect(fire, endpoint).toMatchObject({ status: 'failed', status_code: 403 });
      expect(fire.error, endpoint).toContain(refusal);
      expect(await schedule(old.id), endpoint).toMatchObject({ enabled: false, disabled_reason: 'unschedulable_route' });
    }
    expect(await schedule(victim.id)).toMatchObject({ enabled: true, endpoint: '/health' });
    expect(await query(databaseUrl, "SELECT id FROM service_accounts WHERE name = 'minted-by-a-fire'")).toEqual([]);

    // Only a credential that verifies stops a schedule: a forged one for /mcp is a 401, and the schedule stays on.
    const bystander = await createOk(ROOT_KEY, { endpoint: '/health' });
    await query(databaseUrl, `UPDATE schedules SET method = 'POST', endpoint = '/mcp' WHERE id = $1`, [bystander.id]);
    const forged = `svc_sch_${bystander.id}.${expiresAtOf(300)}.${'A'.repeat(43)}`;
    const response = await call(api.url, 'POST', '/mcp', { token: forged, json: INITIALIZE_REQUEST, headers: MCP_HEADERS });
    expectErrorBody(response, 401);
    expect(await schedule(bystander.id)).toMatchObject({ enabled: true, disabled_reason: null });
  });

  it('the MCP schedule tools enforce the same owner and target rules as REST', async () => {
    const keySchedule = await createOk(ROOT_KEY, { endpoint: '/health' });
    const mallory = await signJwt({ sub: 'mallory-mcp', scopes: ['schedules:read', 'schedules:write'] });
    const client = await connectMcp(api.url, mallory);
    try {
      const patched = await callTool(client, 'update_schedule', { schedule_id: keySchedule.id, endpoint: '/service-accounts' });
      expect(patched).toMatchObject({ isError: true });
      expect(patched.text).toMatch(/^403: .*platform:admin/);
      expect((await callTool(client, 'trigger_schedule', { schedule_id: keySchedule.id })).text).toMatch(/^403: /);
      const aimed = await callTool(client, 'create_schedule', {
        name: uniqueName('m'),
        cron_expr: YEARLY,
        method: 'GET',
        endpoint: '/service-accounts',
      });
      expect(aimed.text).toMatch(/^403: .*service_accounts:read/);
      const loop = await callTool(client, 'create_schedule', {
        name: uniqueName('m'),
        cron_expr: YEARLY,
        method: 'POST',
        endpoint: `/schedules/${keySchedule.id}/trigger`,
      });
      expect(loop).toMatchObject({ isError: true });
      expect(loop.text).toMatch(/^422: /);
      // Positive control: her own schedule on a public route is fine.
      expect(
        (await callTool(client, 'create_schedule', { name: uniqueName('m'), cron_expr: YEARLY, method: 'GET', endpoint: '/health' }))
          .isError,
      ).toBe(false);
    } finally {
      await client.close();
    }
    expect(await schedule(keySchedule.id)).toMatchObject({ endpoint: '/health' });
  });
});

describe('security: a schedule whose owner the instance no longer accepts (the api restarted without JWT verification)', () => {
  it('is refused (401), disabled with the reason once refusals outlast a rollout, and runs nothing as its owner; the security key’s schedule still fires', async () => {
    const databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' };
    const create = (url: string, token: string, json: Record<string, unknown>) =>
      call(url, 'POST', '/schedules', { token, json: { name: uniqueName('gone'), cron_expr: YEARLY, ...json } });

    const withJwt = await startApi({ ...env, JWT_SECRET });
    const alice = await signJwt({ sub: 'alice', scopes: ['schedules:write', 'schedules:read', 'agents:echo-agent:run'] });
    const aliceSchedule = await create(withJwt.url, alice, {
      method: 'POST',
      endpoint: '/agents/echo-agent/runs',
      payload: { message: 'as alice' },
    });
    expect(aliceSchedule.status, aliceSchedule.text).toBe(201);
    await withJwt.stop();

    const api = await startApi(env);
    const worker = await startWorker({
      DATABASE_URL: databaseUrl,
      PUBLIC_URL: api.url,
      SCHEDULE_TICK_INTERVAL_MS: '200',
      DEMO_COMPONENTS: 'true',
    });
    const lastFire = async (id: string) => {
      expect((await call(api.url, 'POST', `/schedules/${id}/trigger`, { token: ROOT_KEY })).status).toBe(202);
      let fire: { status: string } | undefined;
      await waitFor(
        async () => {
          fire = (await call(api.url, 'GET', `/schedules/${id}/runs?limit=1`, { token: ROOT_KEY })).body.data[0];
          return fire !== undefined && FINAL.includes(fire.status);
        },
        20_000,
        `a fire of ${id}`,
      );
      return fire;
    };
    try {
      expect(await lastFire(aliceSchedule.body.id)).toMatchObject({ status: 'failed', status_code: 401 });
      // Within a rollout's length the schedule stays (a replica with JWT settings may take the next fire)...
      expect((await call(api.url, 'GET', `/schedules/${aliceSchedule.body.id}`, { token: ROOT_KEY })).body).toMatchObject({
        enabled: true,
      });
      // ...and refusals that outlast it disable it.
      await query(databaseUrl, "UPDATE schedules SET owner_refused_since = now() - interval '16 minutes' WHERE id = $1", [
        aliceSchedule.body.id,
      ]);
      expect(await lastFire(aliceSchedule.body.id)).toMatchObject({ status: 'failed', status_code: 401 });
      expect((await call(api.url, 'GET', `/schedules/${aliceSchedule.body.id}`, { token: ROOT_KEY })).body).toMatchObject({
        enabled: false,
        next_run_at: null,
        disabled_reason: 'owner_credential_unaccepted:jwt',
      });
      expect(await query(databaseUrl, `SELECT id FROM runs WHERE message = 'as alice'`)).toEqual([]);
      // Positive control: the same worker and api fire an owner they still accept.
      const keySchedule = await create(api.url, ROOT_KEY, { method: 'GET', endpoint: '/health' });
      expect(await lastFire(keySchedule.body.id)).toMatchObject({ status: 'success', status_code: 200 });
    } finally {
      await worker.stop();
      await api.stop();
    }
  });
});

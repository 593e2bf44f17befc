import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { expectErrorBody, expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { callTool, connectMcp } from '../../../test/support/mcp';
import { mintAccount, MintedAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

// A deployment's component that recalls its user's memories and keeps the message as a new one.
const COMPONENTS = join(mkdtempSync(join(tmpdir(), 'memories-')), 'agents.mjs');
writeFileSync(
  COMPONENTS,
  `export default [{
    kind: 'agent', id: 'memo-agent', name: 'Keeps what it is told',
    async run(ctx) {
      const before = await ctx.memories.list();
      await ctx.memories.add(ctx.message, ['told']);
      return JSON.stringify(before.map((m) => m.memory));
    },
  }];`,
);

const MEMORY_SCOPES = ['memories:read', 'memories:write', 'memories:delete', 'agents:run'];

describe('memories', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let alice: MintedAccount;
  let bob: MintedAccount;
  let reader: MintedAccount;
  let admin: MintedAccount;

  beforeAll(async () => {
    const env = { DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, COMPONENTS_MODULE: COMPONENTS, MCP_ENABLED: 'true' };
    api = await startApi(env);
    worker = await startWorker(env);
    alice = await mintAccount(api.url, ROOT_KEY, { scopes: MEMORY_SCOPES, privileged: true });
    bob = await mintAccount(api.url, ROOT_KEY, { scopes: MEMORY_SCOPES, privileged: true });
    reader = await mintAccount(api.url, ROOT_KEY, { scopes: ['memories:read'] });
    admin = await mintAccount(api.url, ROOT_KEY, { scopes: ['platform:admin'], privileged: true });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  const create = (token: string, json: Record<string, unknown>) => call(api.url, 'POST', '/memories', { token, json });

  it('creates, reads, changes and deletes a memory; a token’s memory belongs to sa:<name> whatever user_id says', async () => {
    const created = await create(alice.token, { memory: 'Prefers tea', topics: ['drinks'], user_id: 'someone-else' });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      memory: 'Prefers tea',
      topics: ['drinks'],
      user_id: `sa:${alice.name}`,
      component_type: null,
      component_id: null,
    });
    expect(typeof created.body.created_at).toBe('number');
    const id = created.body.memory_id;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/); // time-ordered (UUIDv7), as run ids are
    expect((await call(api.url, 'GET', `/memories/${id}`, { token: alice.token })).body).toEqual(created.body);

    const patched = await call(api.url, 'PATCH', `/memories/${id}`, { token: alice.token, json: { memory: 'Prefers green tea' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ memory_id: id, memory: 'Prefers green tea', topics: ['drinks'] });
    // A misspelt field is refused, not a 200 that changed nothing (or a memory kept without its topics).
    const misspelt = await call(api.url, 'PATCH', `/memories/${id}`, { token: alice.token, json: { text: 'Prefers coffee' } });
    expect(expectValidationBody(misspelt)).toEqual([['body', 'text']]);
    expect(misspelt.body.detail[0].type).toBe('extra_forbidden');
    expect(expectValidationBody(await create(alice.token, { memory: 'Likes jazz', topic: ['music'] }))).toEqual([['body', 'topic']]);
    expect((await call(api.url, 'GET', `/memories/${id}`, { token: alice.token })).body.memory).toBe('Prefers green tea');

    expect((await call(api.url, 'DELETE', `/memories/${id}`, { token: alice.token })).status).toBe(204);
    expectErrorBody(await call(api.url, 'GET', `/memories/${id}`, { token: alice.token }), 404);
    expectErrorBody(await call(api.url, 'DELETE', `/memories/${id}`, { token: alice.token }), 404);
  });

  it('filters by user, component, topic and text, with pagination and sort', async () => {
    const user = `filter-user-${Date.now()}`;
    const made = [];
    for (const [memory, topics, component_id] of [
      ['Lives in Lisbon', ['home', 'travel'], 'planner'],
      ['Flies 50% of the time', ['travel'], 'planner'],
      ['Allergic to nuts', ['health'], 'chef'],
    ] as const) {
      const response = await create(ROOT_KEY, { memory, topics, user_id: user, component_type: 'agent', component_id });
      expect(response.status, response.text).toBe(201);
      made.push(response.body.memory_id);
    }
    const list = (query: string) => call(api.url, 'GET', `/memories?user_id=${user}&${query}`, { token: ROOT_KEY });
    const texts = async (query: string) => (await list(query)).body.data.map((m: { memory: string }) => m.memory);

    expect(await texts('topic=travel&sort_by=created_at&sort_order=asc')).toEqual(['Lives in Lisbon', 'Flies 50% of the time']);
    expect(await texts('component_id=chef')).toEqual(['Allergic to nuts']);
    expect(await texts('search=LISBON')).toEqual(['Lives in Lisbon']);
    // % is text, not a wildcard.
    expect(await texts('search=50%25')).toEqual(['Flies 50% of the time']);
    const page = await list('limit=2&page=2&sort_by=created_at&sort_order=asc');
    expect(page.body.data.map((m: { memory_id: string }) => m.memory_id)).toEqual([made[2]]);
    expect(page.body.meta).toMatchObject({ page: 2, limit: 2, total_count: 3, total_pages: 2 });

    const topics = await call(api.url, 'GET', `/memory_topics?user_id=${user}`, { token: ROOT_KEY });
    expect(topics.body).toEqual(['health', 'home', 'travel']);
  });

  it('keeps one token’s memories invisible and untouchable to another; the security key and an admin token see all', async () => {
    const mine = await create(alice.token, { memory: 'Alice’s secret', topics: ['alice-only'] });
    const id = mine.body.memory_id;
    expectErrorBody(await call(api.url, 'GET', `/memories/${id}`, { token: bob.token }), 404);
    expectErrorBody(await call(api.url, 'PATCH', `/memories/${id}`, { token: bob.token, json: { memory: 'mine now' } }), 404);
    expectErrorBody(await call(api.url, 'DELETE', `/memories/${id}`, { token: bob.token }), 404);
    const bobs = await call(api.url, 'GET', '/memories?limit=100', { token: bob.token });
    expect(bobs.body.data.map((m: { memory_id: string }) => m.memory_id)).not.toContain(id);
    // Naming alice as the user does not widen bob's view.
    expect((await call(api.url, 'GET', `/memories?user_id=sa:${alice.name}`, { token: bob.token })).body.data).toEqual([]);
    expect((await call(api.url, 'GET', '/memory_topics', { token: bob.token })).body).not.toContain('alice-only');

    for (const token of [ROOT_KEY, admin.token]) {
      const seen = await call(api.url, 'GET', `/memories?user_id=sa:${alice.name}&limit=100`, { token });
      expect(seen.body.data.map((m: { memory_id: string }) => m.memory_id)).toContain(id);
      expect((await call(api.url, 'GET', `/memories/${id}`, { token })).body.user_id).toBe(`sa:${alice.name}`);
    }
    // The security key may attribute a memory to a service account; a token, even an admin's, keeps its own.
    expect((await create(ROOT_KEY, { memory: 'Noted for bob', user_id: `sa:${bob.name}` })).body.user_id).toBe(`sa:${bob.name}`);
    expect((await create(admin.token, { memory: 'Noted by an admin', user_id: `sa:${bob.name}` })).body.user_id).toBe(`sa:${admin.name}`);
  });

  it('refuses the wrong principal: anonymous 401, a narrower token 403, default scopes 403', async () => {
    expectErrorBody(await call(api.url, 'GET', '/memories'), 401);
    expectErrorBody(await call(api.url, 'POST', '/memories', { json: { memory: 'x' } }), 401);
    expectErrorBody(await call(api.url, 'GET', '/memory_topics'), 401);
    expect((await call(api.url, 'GET', '/memories', { token: reader.token })).status).toBe(200);
    expectErrorBody(await create(reader.token, { memory: 'x' }), 403);
    const aliceMemory = await create(alice.token, { memory: 'kept' });
    expectErrorBody(
      await call(api.url, 'PATCH', `/memories/${aliceMemory.body.memory_id}`, { token: reader.token, json: { memory: 'y' } }),
      403,
    );
    expectErrorBody(await call(api.url, 'DELETE', `/memories/${aliceMemory.body.memory_id}`, { token: reader.token }), 403);
    const plain = await mintAccount(api.url, ROOT_KEY);
    expectErrorBody(await call(api.url, 'GET', '/memories', { token: plain.token }), 403);
  });

  it('answers bad input with the 422 body', async () => {
    expect(expectValidationBody(await create(alice.token, { memory: '' }))).toContainEqual(['body', 'memory']);
    expect(expectValidationBody(await create(alice.token, { memory: 'x', topics: 'not-a-list' }))).toContainEqual(['body', 'topics']);
    expect(expectValidationBody(await create(ROOT_KEY, { memory: 'x', user_id: '' }))).toEqual([['body', 'user_id']]);
    expect(expectValidationBody(await create(alice.token, { memory: 'x', component_type: 'robot' }))).toContainEqual([
      'body',
      'component_type',
    ]);
    expect(expectValidationBody(await call(api.url, 'GET', '/memories?limit=0', { token: alice.token }))).toContainEqual([
      'query',
      'limit',
    ]);
    expectErrorBody(await call(api.url, 'GET', '/memories/not-a-uuid', { token: alice.token }), 404);
  });

  it('lets a component read and keep its user’s memories through ctx.memories, on the api and on a worker', async () => {
    const first = await call(api.url, 'POST', '/agents/memo-agent/runs', { token: alice.token, json: { message: 'Likes jazz' } });
    expect(first.status, first.text).toBe(200);
    const background = await call(api.url, 'POST', '/agents/memo-agent/runs', {
      token: alice.token,
      json: { message: 'Plays piano', background: true },
    });
    expect(background.status, background.text).toBe(202);
    let run: { status: string; content: string } = { status: 'queued', content: '' };
    await waitFor(
      async () => {
        run = (await call(api.url, 'GET', `/agents/memo-agent/runs/${background.body.run_id}`, { token: alice.token })).body;
        return run.status === 'completed';
      },
      20_000,
      'the background run to complete',
    );
    // The worker's run saw what the api's run kept.
    expect(JSON.parse(run.content)).toContain('Likes jazz');
    const kept = await call(api.url, 'GET', '/memories?component_id=memo-agent&sort_by=created_at&sort_order=asc', { token: alice.token });
    expect(kept.body.data.map((m: Record<string, unknown>) => [m.memory, m.user_id, m.component_type, m.topics])).toEqual([
      ['Likes jazz', `sa:${alice.name}`, 'agent', ['told']],
      ['Plays piano', `sa:${alice.name}`, 'agent', ['told']],
    ]);
    // Bob's run of the same component sees none of alice's memories.
    const bobs = await call(api.url, 'POST', '/agents/memo-agent/runs', { token: bob.token, json: { message: 'Bob fact' } });
    expect(JSON.parse(bobs.body.content)).not.toContain('Likes jazz');
  });

  it('offers the routes as MCP tools under the same scopes', async () => {
    const client = await connectMcp(api.url, alice.token);
    const created = await callTool(client, 'create_memory', { memory: 'Via MCP', topics: ['mcp'], user_id: 'ignored' });
    expect(created.isError, created.text).toBe(false);
    expect(created.structured).toMatchObject({ memory: 'Via MCP', user_id: `sa:${alice.name}` });
    const id = created.structured.memory_id;
    expect((await callTool(client, 'update_memory', { memory_id: id, topics: ['mcp', 'tools'] })).structured.topics).toEqual([
      'mcp',
      'tools',
    ]);
    expect(
      (await callTool(client, 'list_memories', { topic: 'tools' })).structured.data.map((m: { memory_id: string }) => m.memory_id),
    ).toEqual([id]);
    const misspelt = await callTool(client, 'update_memory', { memory_id: id, text: 'changed?' });
    expect(misspelt.isError).toBe(true);
    expect(misspelt.text).toContain('text');
    expect((await callTool(client, 'list_memory_topics')).structured.topics).toEqual(expect.arrayContaining(['mcp', 'tools']));
    expect((await callTool(client, 'get_memory', { memory_id: id })).structured.memory).toBe('Via MCP');

    const bobClient = await connectMcp(api.url, bob.token);
    expect((await callTool(bobClient, 'get_memory', { memory_id: id })).isError).toBe(true);
    expect((await callTool(bobClient, 'delete_memory', { memory_id: id })).isError).toBe(true);
    const readerClient = await connectMcp(api.url, reader.token);
    const refused = await callTool(readerClient, 'create_memory', { memory: 'nope' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('memories:write');

    expect((await callTool(client, 'delete_memory', { memory_id: id })).structured).toEqual({ deleted: id });
    await Promise.all([client.close(), bobClient.close(), readerClient.close()]);
  });
});

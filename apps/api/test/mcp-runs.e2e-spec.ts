import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { callTool, connectMcp } from '../../../test/support/mcp';
import { mintAccount, MintedAccount, ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { RunningApi, startApi, waitFor } from '../../../test/support/processes';

describe('MCP run, session, component and schedule tools', () => {
  let api: RunningApi;
  let databaseUrl: string;
  let alice: MintedAccount;
  let bob: MintedAccount;
  let asAlice: Client;
  let asBob: Client;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      MCP_ENABLED: 'true',
      DEMO_COMPONENTS: 'true',
    });
    // The default scopes: agents/teams/workflows:run, sessions:read, config:read.
    alice = await mintAccount(api.url, ROOT_KEY);
    bob = await mintAccount(api.url, ROOT_KEY);
    asAlice = await connectMcp(api.url, alice.token);
    asBob = await connectMcp(api.url, bob.token);
  });
  afterAll(async () => {
    await asAlice?.close();
    await asBob?.close();
    await api?.stop();
  });

  it('runs echo-agent and waits for the finished run, attributed to the token principal', async () => {
    const result = await callTool(asAlice, 'run_agent', { agent_id: 'echo-agent', message: 'hello over MCP' });
    expect(result.isError, result.text).toBe(false);
    expect(result.structured).toMatchObject({
      component_type: 'agent',
      component_id: 'echo-agent',
      status: 'completed',
      content: 'hello over MCP',
      user_id: `sa:${alice.name}`,
      background: false,
    });
    const rest = await call(api.url, 'GET', `/agents/echo-agent/runs/${result.structured.run_id}`, { token: alice.token });
    expect(rest.body).toEqual(result.structured);
    const fetched = await callTool(asAlice, 'get_agent_run', { agent_id: 'echo-agent', run_id: result.structured.run_id });
    expect(fetched.structured).toEqual(rest.body);
  });

  it('runs the demo team and workflow through their own tools', async () => {
    expect((await callTool(asAlice, 'run_team', { team_id: 'echo-team', message: 'team' })).structured).toMatchObject({
      status: 'completed',
      content: 'team',
    });
    expect((await callTool(asAlice, 'run_workflow', { workflow_id: 'echo-workflow', message: 'flow' })).structured).toMatchObject({
      status: 'completed',
      content: 'flow',
    });
  });

  it('reports a failing component as a tool error carrying the failed run, and an unknown one as a tool error', async () => {
    const failed = await callTool(asAlice, 'run_agent', { agent_id: 'fail-agent', message: 'x' });
    expect(failed.isError).toBe(true);
    expect(failed.structured).toMatchObject({ status: 'failed', error: expect.any(String) });
    expect(JSON.parse(failed.text)).toMatchObject({ run_id: failed.structured.run_id, status: 'failed' });
    expect(await callTool(asAlice, 'run_agent', { agent_id: 'nobody', message: 'x' })).toMatchObject({
      isError: true,
      text: "404: Agent 'nobody' not found",
    });
    // An id no component can have is not found either (not a 403 for an impossible scope), and a huge one is not
    // echoed whole into the caller's (a model's) context.
    expect(await callTool(asAlice, 'run_agent', { agent_id: 'echo-agent:run', message: 'x' })).toMatchObject({
      isError: true,
      text: "404: Agent 'echo-agent:run' not found",
    });
    const huge = await callTool(asAlice, 'run_agent', { agent_id: 'x'.repeat(200_000), message: 'x' });
    expect(huge).toMatchObject({ isError: true, text: expect.stringMatching(/^404: Agent 'x{128}…' not found$/) });
  });

  it('tells a client that asks for progress the run id at once and the content as it comes; the answer is the same finished run', async () => {
    const messages: string[] = [];
    const result = await asAlice.callTool(
      { name: 'run_agent', arguments: { agent_id: 'echo-agent', message: 'progress please' } },
      undefined,
      {
        onprogress: ({ message }) => messages.push(String(message)),
      },
    );
    const run = result.structuredContent as { run_id: string; session_id: string; status: string; content: string };
    expect(run).toMatchObject({ status: 'completed', content: expect.stringContaining('progress please') });
    expect(messages[0]).toBe(`Run ${run.run_id} started (session ${run.session_id})`);
    expect(messages.slice(1).join('')).toBe(run.content);

    // The wrong principal hears nothing: bob continuing alice's session is refused before the run exists, and a
    // token for one agent calling another is refused by the scope check; neither sends a word of progress.
    const overheard: string[] = [];
    const listen = { onprogress: ({ message }: { message?: string }) => overheard.push(String(message)) };
    const foreign = await asBob.callTool(
      { name: 'run_agent', arguments: { agent_id: 'echo-agent', message: 'mine now', session_id: run.session_id } },
      undefined,
      listen,
    );
    expect(foreign).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/^404: /) }] });
    const narrow = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:echo-agent:run'] });
    const asNarrow = await connectMcp(api.url, narrow.token);
    const refused = await asNarrow.callTool({ name: 'run_agent', arguments: { agent_id: 'sleep-agent', message: '1' } }, undefined, listen);
    await asNarrow.close();
    expect(refused).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/^403: /) }] });
    expect(overheard).toEqual([]);
  });

  it('keeps a quiet run alive for a client whose timeout restarts on progress; without progress that client gives up', async () => {
    // sleep-agent says nothing for 8 s: only the heartbeats (every 5 s) restart a 6.5 s timeout.
    const heard: string[] = [];
    const quiet = await asAlice.callTool({ name: 'run_agent', arguments: { agent_id: 'sleep-agent', message: '8' } }, undefined, {
      timeout: 6500,
      resetTimeoutOnProgress: true,
      onprogress: ({ message }) => heard.push(String(message)),
    });
    expect(quiet.structuredContent).toMatchObject({ status: 'completed' });
    expect(heard.filter((message) => / is running$/.test(message)).length).toBeGreaterThanOrEqual(1);
    // The same client, asking for no progress: nothing restarts its timeout.
    await expect(
      asAlice.callTool({ name: 'run_agent', arguments: { agent_id: 'sleep-agent', message: '3' } }, undefined, { timeout: 1500 }),
    ).rejects.toThrow(/Request timed out/);
  }, 30_000);

  it('cancels the run when the client cancels the call: a run nobody waits for does not go on', async () => {
    const seconds = '17'; // no other test sleeps this long: its run is found by its message
    const abandoned = new AbortController();
    const runOf = async () => (await query<{ status: string }>(databaseUrl, 'SELECT status FROM runs WHERE message = $1', [seconds]))[0];
    const calling = asAlice.callTool({ name: 'run_agent', arguments: { agent_id: 'sleep-agent', message: seconds } }, undefined, {
      signal: abandoned.signal,
    });
    calling.catch(() => undefined); // awaited below, once aborted
    // Cancelled once the run is under way (a fixed delay could fall before it started on a loaded machine).
    await waitFor(async () => (await runOf()) !== undefined, 10_000, 'the run to start');
    abandoned.abort('user pressed Esc');
    await expect(calling).rejects.toThrow(/user pressed Esc/);
    await waitFor(async () => (await runOf())?.status === 'cancelled', 8_000, 'the abandoned run to be cancelled');
  }, 20_000);

  it("another caller's cancellations, whatever request ids they name, cancel nothing of alice's", async () => {
    const running = asAlice.callTool({ name: 'run_agent', arguments: { agent_id: 'sleep-agent', message: '2' } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (let requestId = 0; requestId < 100; requestId += 1) {
      await asBob.notification({ method: 'notifications/cancelled', params: { requestId, reason: 'not yours' } });
    }
    expect((await running).structuredContent).toMatchObject({ status: 'completed', content: 'Slept 2 s' });
  }, 20_000);

  it('queues a background run and cancels it while queued', async () => {
    const queued = await callTool(asAlice, 'run_agent', { agent_id: 'sleep-agent', message: '1', background: true });
    expect(queued.structured).toEqual({ run_id: expect.any(String), session_id: expect.any(String), status: 'queued' });
    const cancelled = await callTool(asAlice, 'cancel_agent_run', { agent_id: 'sleep-agent', run_id: queued.structured.run_id });
    expect(cancelled.structured).toMatchObject({ run_id: queued.structured.run_id, status: 'cancelled', background: true });
  });

  it('narrows the run scope to the component named in the arguments', async () => {
    const echoOnly = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:echo-agent:run'] });
    const client = await connectMcp(api.url, echoOnly.token);
    try {
      expect((await callTool(client, 'run_agent', { agent_id: 'echo-agent', message: 'ok' })).structured.status).toBe('completed');
      expect(await callTool(client, 'run_agent', { agent_id: 'sleep-agent', message: '0' })).toMatchObject({
        isError: true,
        text: '403: Insufficient permissions. Required scope(s): agents:run or agents:sleep-agent:run',
      });
      expect((await callTool(client, 'list_agents')).text).toBe('403: Insufficient permissions. Required scope(s): agents:read');
      // A tool it may call in some form says what is wrong with the arguments, a missing component id included...
      expect(await callTool(client, 'run_agent', { message: 'no id' })).toMatchObject({
        isError: true,
        text: expect.stringMatching(/^422: Invalid arguments: agent_id: /),
      });
      // ...and one it may not call at all answers the scope error first, whatever the arguments.
      expect((await callTool(client, 'run_team', { message: 'no id' })).text).toBe(
        '403: Insufficient permissions. Required scope(s): teams:run',
      );
    } finally {
      await client.close();
    }
  });

  it('self-scopes two service accounts exactly as REST does', async () => {
    const run = (await callTool(asAlice, 'run_agent', { agent_id: 'echo-agent', message: 'private to alice' })).structured;
    const ref = { agent_id: 'echo-agent', run_id: run.run_id };

    // Bob cannot see, read or cancel Alice's run or session: 404, never 403, so ids do not leak.
    expect(await callTool(asBob, 'get_agent_run', ref)).toMatchObject({ isError: true, text: `404: Run '${run.run_id}' not found` });
    expect((await callTool(asBob, 'cancel_agent_run', ref)).text).toMatch(/^404: /);
    expect((await callTool(asBob, 'get_session', { session_id: run.session_id })).text).toMatch(/^404: /);
    expect((await callTool(asBob, 'list_session_runs', { session_id: run.session_id })).text).toMatch(/^404: /);
    const bobSessions = await callTool(asBob, 'list_sessions', { limit: 100 });
    expect(bobSessions.structured.data.map((session: { session_id: string }) => session.session_id)).not.toContain(run.session_id);
    expect(bobSessions.structured.data).toEqual((await call(api.url, 'GET', '/sessions?limit=100', { token: bob.token })).body.data);

    // Alice sees her own, and continuing her session keeps it hers.
    const aliceSessions = await callTool(asAlice, 'list_sessions', { limit: 100 });
    expect(aliceSessions.structured.data.map((session: { session_id: string }) => session.session_id)).toContain(run.session_id);
    expect((await callTool(asAlice, 'get_session', { session_id: run.session_id })).structured).toMatchObject({
      session_id: run.session_id,
      user_id: `sa:${alice.name}`,
    });
    await callTool(asAlice, 'run_agent', { agent_id: 'echo-agent', message: 'again', session_id: run.session_id });
    const runs = await callTool(asAlice, 'list_session_runs', { session_id: run.session_id });
    expect(runs.structured.data.map((row: { message: string }) => row.message).sort()).toEqual(['again', 'private to alice']);

    // Bob cannot write into Alice's session either.
    expect((await callTool(asBob, 'run_agent', { agent_id: 'echo-agent', message: 'intrude', session_id: run.session_id })).isError).toBe(
      true,
    );
  });

  it('ignores a user_id argument for a service account, like REST', async () => {
    const run = await callTool(asAlice, 'run_agent', { agent_id: 'echo-agent', message: 'who', user_id: 'someone-else' });
    expect(run.structured.user_id).toBe(`sa:${alice.name}`);
  });

  it('tells a token what it can run through get_config, as /config does', async () => {
    const config = await callTool(asAlice, 'get_config');
    expect(config.structured.agents.map((agent: { id: string }) => agent.id)).toEqual(['echo-agent', 'sleep-agent', 'fail-agent']);
    expect(config.structured.teams.map((team: { id: string }) => team.id)).toEqual(['echo-team']);
    const echoOnly = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:echo-agent:run', 'config:read'] });
    const rest = await call(api.url, 'GET', '/config', { token: echoOnly.token });
    expect(rest.body).toMatchObject({ agents: [{ id: 'echo-agent', type: 'agent' }], teams: [], workflows: [] });
  });

  it('validates run arguments with the REST rules', async () => {
    const bad = await callTool(asAlice, 'run_agent', { agent_id: 'echo-agent', message: 'x', session_id: 'bad id with spaces' });
    expect(bad).toMatchObject({
      isError: true,
      text: '422: Invalid arguments: session_id: session_id must be 1-128 letters, digits, ., _, : or -',
    });
  });

  it('refuses NUL in tool arguments: 422 for a field, 404 for a component id (never an internal error)', async () => {
    const message = await callTool(asAlice, 'run_agent', { agent_id: 'echo-agent', message: 'a\u0000b' });
    expect(message).toMatchObject({ isError: true, text: expect.stringMatching(/^422: Invalid arguments: message: /) });
    const half = await callTool(asAlice, 'run_agent', { agent_id: 'echo-agent', message: 'hi \ud800', background: true });
    expect(half).toMatchObject({ isError: true, text: expect.stringMatching(/^422: Invalid arguments: message: .*surrogate/) });
    // The security key holds every scope, so the call reaches the run lookup.
    const asKey = await connectMcp(api.url, ROOT_KEY);
    try {
      const run = await callTool(asKey, 'get_agent_run', { agent_id: 'echo\u0000agent', run_id: '00000000-0000-4000-8000-000000000000' });
      expect(run).toMatchObject({ isError: true, text: expect.stringMatching(/^404: /) });
    } finally {
      await asKey.close();
    }
  });

  it('manages schedules under the schedules scopes, self-scoped per service account', async () => {
    const scheduler = await mintAccount(api.url, ROOT_KEY, { scopes: ['schedules:read', 'schedules:write'], privileged: true });
    const other = await mintAccount(api.url, ROOT_KEY, { scopes: ['schedules:read'] });
    const [mine, theirs] = [await connectMcp(api.url, scheduler.token), await connectMcp(api.url, other.token)];
    try {
      const created = await callTool(mine, 'create_schedule', {
        name: uniqueName('nightly'),
        cron_expr: '0 0 1 1 *',
        endpoint: '/health',
        method: 'get',
      });
      expect(created.isError, created.text).toBe(false);
      expect(created.structured).toMatchObject({
        method: 'GET',
        enabled: true,
        user_id: `sa:${scheduler.name}`,
        next_run_at: expect.any(Number),
      });
      const id = created.structured.id;
      const updated = await callTool(mine, 'update_schedule', { schedule_id: id, max_retries: 2, enabled: false });
      expect(updated.structured).toMatchObject({ id, max_retries: 2, enabled: false });
      expect(await callTool(mine, 'update_schedule', { schedule_id: id, timeout_seconds: 0 })).toMatchObject({
        isError: true,
        text: expect.stringMatching(/^422: Invalid arguments: timeout_seconds: /),
      });
      // A misspelt field is refused, as REST refuses it, rather than leaving the schedule as it was.
      const misspelt = await callTool(mine, 'update_schedule', { schedule_id: id, cron: '5 5 * * *' });
      expect(misspelt).toMatchObject({ isError: true, text: expect.stringMatching(/^422: Invalid arguments: .*cron/) });
      expect((await callTool(mine, 'get_schedule', { schedule_id: id })).structured).toEqual(
        (await call(api.url, 'GET', `/schedules/${id}`, { token: scheduler.token })).body,
      );
      expect((await callTool(mine, 'list_schedules', {})).structured.data.map((row: { id: string }) => row.id)).toContain(id);
      // The list tools take the REST route's filters, sort_by and bounds, and their schemas say so.
      const listSchedules = (await mine.listTools()).tools.find((tool) => tool.name === 'list_schedules')!;
      const properties = listSchedules.inputSchema.properties as Record<string, { description?: string }>;
      expect(Object.keys(properties).sort()).toEqual([
        'enabled',
        'limit',
        'managed_by',
        'page',
        'sort_by',
        'sort_order',
        'target_id',
        'target_type',
      ]);
      const byTarget = await callTool(mine, 'list_schedules', { target_type: 'agent', target_id: 'no-such-agent' });
      expect(byTarget.structured.data).toEqual([]);
      expect(properties.sort_by.description).toBe(
        'created_at, updated_at, name, next_run_at (default created_at); unknown fields are ignored',
      );
      expect(properties.limit.description).toBe('Page size, 1 to 1000 (default 20)');
      // Named to sort after the first one, though created after it (the default order puts it first).
      const second = await callTool(mine, 'create_schedule', {
        name: `z-${uniqueName('last-by-name')}`,
        cron_expr: '0 0 1 1 *',
        endpoint: '/health',
      });
      const byName = await callTool(mine, 'list_schedules', { sort_by: 'name', sort_order: 'asc' });
      expect(byName.structured.data.map((row: { id: string }) => row.id)).toEqual([id, second.structured.id]);
      expect(await callTool(mine, 'list_schedules', { limit: 1001 })).toMatchObject({
        isError: true,
        text: expect.stringMatching(/^422: Invalid arguments: limit: /),
      });

      expect((await callTool(theirs, 'get_schedule', { schedule_id: id })).text).toMatch(/^404: /);
      expect((await callTool(theirs, 'list_schedules', {})).structured.data).toEqual([]);
      expect((await callTool(mine, 'delete_schedule', { schedule_id: id })).text).toBe(
        '403: Insufficient permissions. Required scope(s): schedules:delete',
      );
      expect((await callTool(theirs, 'trigger_schedule', { schedule_id: id })).text).toBe(
        '403: Insufficient permissions. Required scope(s): schedules:write',
      );

      await callTool(mine, 'update_schedule', { schedule_id: id, enabled: true });
      const fire = await callTool(mine, 'trigger_schedule', { schedule_id: id });
      expect(fire.isError, fire.text).toBe(false);
      expect(
        (await callTool(mine, 'list_schedule_runs', { schedule_id: id })).structured.data.map((run: { id: string }) => run.id),
      ).toContain(fire.structured.id);
      const root = await connectMcp(api.url, ROOT_KEY);
      expect((await callTool(root, 'delete_schedule', { schedule_id: id })).structured).toEqual({ deleted: id });
      await root.close();
      expect((await call(api.url, 'GET', `/schedules/${id}`, { token: ROOT_KEY })).status).toBe(404);
    } finally {
      await Promise.all([mine.close(), theirs.close()]);
    }
  });
});

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { callTool, connectMcp } from '../../../test/support/mcp';
import { mintAccount, MintedAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

describe('MCP queue tools (admins only, no worker running so jobs stay put)', () => {
  let api: RunningApi;
  let admin: MintedAccount;
  let runner: MintedAccount;
  let asAdmin: Client;
  let asRunner: Client;
  beforeAll(async () => {
    api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      MCP_ENABLED: 'true',
      DEMO_COMPONENTS: 'true',
    });
    admin = await mintAccount(api.url, ROOT_KEY, { scopes: ['platform:admin'], privileged: true });
    runner = await mintAccount(api.url, ROOT_KEY);
    asAdmin = await connectMcp(api.url, admin.token);
    asRunner = await connectMcp(api.url, runner.token);
  });
  afterAll(async () => {
    await asAdmin?.close();
    await asRunner?.close();
    await api?.stop();
  });

  it('refuses every queue tool without platform:admin', async () => {
    for (const [tool, args] of [
      ['list_queue_jobs', {}],
      ['get_queue_stats', {}],
      ['get_queue_job', { job_id: 'x' }],
      ['requeue_queue_job', { job_id: 'x' }],
    ] as const) {
      expect(await callTool(asRunner, tool, args), tool).toMatchObject({
        isError: true,
        text: '403: Insufficient permissions. Required scope(s): platform:admin',
      });
    }
  });

  it('lists, inspects, and requeues a background run job as REST does', async () => {
    const queued = (await callTool(asRunner, 'run_agent', { agent_id: 'echo-agent', message: 'later', background: true })).structured;
    const listed = await callTool(asAdmin, 'list_queue_jobs', { status: ['queued'], limit: 1000 });
    expect(listed.structured.data.map((job: { id: string }) => job.id)).toContain(queued.run_id);
    const job = await callTool(asAdmin, 'get_queue_job', { job_id: queued.run_id });
    expect(job.structured).toMatchObject({
      id: queued.run_id,
      status: 'queued',
      component_id: 'echo-agent',
      user_id: `sa:${runner.name}`,
      max_attempts: 1,
    });
    expect(job.structured).toEqual((await call(api.url, 'GET', `/queue/jobs/${queued.run_id}`, { token: admin.token })).body);

    expect((await callTool(asAdmin, 'requeue_queue_job', { job_id: queued.run_id })).text).toMatch(/^400: /);
    await callTool(asRunner, 'cancel_agent_run', { agent_id: 'echo-agent', run_id: queued.run_id });
    const requeued = await callTool(asAdmin, 'requeue_queue_job', { job_id: queued.run_id, clear_cancellation: true });
    expect(requeued.isError, requeued.text).toBe(false);
    expect(requeued.structured).toMatchObject({ id: queued.run_id, status: 'queued', max_attempts: 2 });
    expect((await callTool(asAdmin, 'get_queue_stats')).structured.counts.queued).toBeGreaterThanOrEqual(1);
  });

  it('validates arguments with the REST rules', async () => {
    expect((await callTool(asAdmin, 'list_queue_jobs', { limit: 5000 })).text).toMatch(/^422: Invalid arguments: limit: /);
  });
});

describe('MCP queue tools on a replica with the queue disabled', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      MCP_ENABLED: 'true',
      QUEUE_ENABLED: 'false',
    });
  });
  afterAll(() => api?.stop());

  it('answers 403 before 503, like REST', async () => {
    const admin = await connectMcp(api.url, ROOT_KEY);
    const runner = await connectMcp(api.url, (await mintAccount(api.url, ROOT_KEY)).token);
    try {
      const disabled = await callTool(admin, 'list_queue_jobs');
      expect(disabled.isError).toBe(true);
      expect(disabled.text).toBe(`503: ${(await call(api.url, 'GET', '/queue/jobs', { token: ROOT_KEY })).body.detail}`);
      expect((await callTool(runner, 'list_queue_jobs')).text).toBe('403: Insufficient permissions. Required scope(s): platform:admin');
    } finally {
      await Promise.all([admin.close(), runner.close()]);
    }
  });
});

describe('MCP background run completed by a real worker', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  beforeAll(async () => {
    const env = { DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' };
    api = await startApi({ ...env, MCP_ENABLED: 'true' });
    worker = await startWorker(env);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  it('queues run_agent with background=true and get_agent_run reports the worker’s result', async () => {
    const client = await connectMcp(api.url, (await mintAccount(api.url, ROOT_KEY)).token);
    try {
      const queued = await callTool(client, 'run_agent', { agent_id: 'echo-agent', message: 'done by the worker', background: true });
      // DESIGN.md's 202 body: queued, even when an idle worker woken by NOTIFY has claimed it already.
      expect(queued.structured).toEqual({ run_id: expect.any(String), session_id: expect.any(String), status: 'queued' });
      const ref = { agent_id: 'echo-agent', run_id: queued.structured.run_id };
      await waitFor(
        async () => (await callTool(client, 'get_agent_run', ref)).structured.status === 'completed',
        30_000,
        'the worker to complete the run',
      );
      expect((await callTool(client, 'get_agent_run', ref)).structured).toMatchObject({
        status: 'completed',
        content: 'done by the worker',
        background: true,
      });
    } finally {
      await client.close();
    }
  });
});

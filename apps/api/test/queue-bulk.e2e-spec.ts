import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { expectErrorBody, expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { callTool, connectMcp } from '../../../test/support/mcp';
import { mintAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

interface Job {
  id: string;
  status: string;
  component_id: string;
  max_attempts: number;
}

describe('bulk requeue and cancel (real api and worker)', () => {
  let api: RunningApi;
  let worker: RunningProcess | undefined;
  let databaseUrl: string;
  const ids: Record<'failed' | 'completed' | 'running' | 'queued' | 'cancelled', string[]> = {
    failed: [],
    completed: [],
    running: [],
    queued: [],
    cancelled: [],
  };

  const background = async (agent: string, message: string) =>
    (await call(api.url, 'POST', `/agents/${agent}/runs`, { token: ROOT_KEY, json: { message, background: true } })).body.run_id as string;
  const job = async (id: string): Promise<Job> => (await call(api.url, 'GET', `/queue/jobs/${id}`, { token: ROOT_KEY })).body;
  const bulk = (action: 'requeue' | 'cancel', json: unknown, token = ROOT_KEY) =>
    call(api.url, 'POST', `/queue/jobs/${action}`, { token, json });

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', MCP_ENABLED: 'true' };
    api = await startApi(env);
    worker = await startWorker(env);
    // A mix of states made the real way: runs that fail, complete, keep running; then, with no worker, runs that wait.
    for (let index = 0; index < 3; index += 1) ids.failed.push(await background('fail-agent', `f${index}`));
    for (let index = 0; index < 2; index += 1) ids.completed.push(await background('echo-agent', `c${index}`));
    ids.running.push(await background('sleep-agent', '60'));
    await waitFor(
      async () => {
        const states = await Promise.all([...ids.failed, ...ids.completed, ...ids.running].map(async (id) => (await job(id)).status));
        return states.join() === 'failed,failed,failed,completed,completed,running';
      },
      30_000,
      'failed, completed and running jobs',
    );
    await worker.stop('SIGKILL');
    worker = undefined;
    for (let index = 0; index < 3; index += 1) ids.queued.push(await background('echo-agent', `q${index}`));
    const cancelled = ids.queued.pop()!;
    await call(api.url, 'POST', `/agents/echo-agent/runs/${cancelled}/cancel`, { token: ROOT_KEY });
    ids.cancelled.push(cancelled);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  const everything = () => [...ids.failed, ...ids.completed, ...ids.running, ...ids.queued, ...ids.cancelled];

  it('a dry run (the default) reports exactly what a requeue would do, and changes nothing', async () => {
    const response = await bulk('requeue', { filter: { ids: everything() } });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({ dry_run: true, matched: 9, changed: 1 });
    const reasons = Object.fromEntries(response.body.skipped.map((skip: { id: string; reason: string }) => [skip.id, skip.reason]));
    expect(reasons).toEqual({
      ...Object.fromEntries(ids.failed.map((id) => [id, 'lock_grace'])),
      ...Object.fromEntries(ids.completed.map((id) => [id, 'status:completed'])),
      [ids.running[0]]: 'status:running',
      ...Object.fromEntries(ids.queued.map((id) => [id, 'status:queued'])),
    });
    expect((await job(ids.failed[0])).status).toBe('failed');
    expect((await job(ids.cancelled[0])).status).toBe('cancelled');
  });

  it('requeues failed and cancelled jobs for real, forced past the lock grace, each with one more attempt', async () => {
    const before = await Promise.all(ids.failed.map(job));
    const response = await bulk('requeue', {
      filter: { status: ['failed', 'cancelled'], ids: everything() },
      dry_run: false,
      force: true,
      clear_cancellation: true,
    });
    expect(response.body).toEqual({ dry_run: false, matched: 4, changed: 4, skipped: [] });
    for (const [index, id] of ids.failed.entries()) {
      expect(await job(id)).toMatchObject({ status: 'queued', max_attempts: before[index].max_attempts + 1 });
    }
    expect((await job(ids.cancelled[0])).status).toBe('queued');
  });

  it('cancels queued jobs by component and never touches running or finished ones', async () => {
    const response = await bulk('cancel', { filter: { component_id: 'echo-agent' }, dry_run: false });
    // echo-agent: 2 completed, 2 queued, 1 requeued (the cancelled one).
    expect(response.body).toMatchObject({ dry_run: false, matched: 5, changed: 3 });
    expect(response.body.skipped.map((skip: { reason: string }) => skip.reason).sort()).toEqual(['status:completed', 'status:completed']);
    for (const id of [...ids.queued, ...ids.cancelled]) {
      expect((await job(id)).status).toBe('cancelled');
    }
    for (const id of ids.completed) {
      expect((await job(id)).status).toBe('completed');
    }
    const sleeper = await bulk('cancel', { filter: { ids: ids.running }, dry_run: false });
    expect(sleeper.body).toEqual({ dry_run: false, matched: 1, changed: 0, skipped: [{ id: ids.running[0], reason: 'status:running' }] });
    expect((await job(ids.running[0])).status).toBe('running');
  });

  it('filters by error text and time window', async () => {
    const since = Math.floor(Date.now() / 1000) - 3600;
    const failedText = await bulk('cancel', { filter: { error_contains: 'OPERATOR before', created_after: since } });
    expect(failedText.body.matched).toBe(3);
    const future = await bulk('cancel', { filter: { created_after: since + 7200 } });
    expect(future.body).toEqual({ dry_run: true, matched: 0, changed: 0, skipped: [] });
  });

  it('refuses an empty filter, too many ids and an out-of-range limit with the 422 body', async () => {
    expect(expectValidationBody(await bulk('requeue', { filter: {} }))).toEqual([['body', 'filter']]);
    expect(expectValidationBody(await bulk('cancel', {}))).toEqual([['body', 'filter']]);
    // A kind of component that does not exist matches nothing, so it is refused rather than reported as 0 matched.
    expect(expectValidationBody(await bulk('requeue', { filter: { component_type: 'string' } }))).toEqual([
      ['body', 'filter', 'component_type'],
    ]);
    const tooMany = Array.from({ length: 1001 }, () => randomUUID());
    expect(expectValidationBody(await bulk('requeue', { filter: { ids: tooMany } }))).toEqual([['body', 'filter', 'ids']]);
    expect(expectValidationBody(await bulk('requeue', { filter: { status: ['failed'] }, limit: 10_001 }))).toEqual([['body', 'limit']]);
    expect(expectValidationBody(await bulk('requeue', { filter: { status: ['lost'] } }))).toEqual([['body', 'filter', 'status']]);
  });

  it('refuses a field it does not take (a misspelt criterion would select more jobs), changing nothing', async () => {
    const states = async () => (await Promise.all(everything().map(job))).map(({ status, max_attempts }) => ({ status, max_attempts }));
    const before = await states();
    // `component` for component_id: ignored, the filter would be "every failed job".
    const misspelt = await bulk('requeue', { filter: { status: ['failed'], component: 'fail-agent' }, dry_run: false, force: true });
    expect(expectValidationBody(misspelt)).toEqual([['body', 'filter', 'component']]);
    expect(misspelt.body.detail[0]).toMatchObject({
      type: 'extra_forbidden',
      msg: "Unknown field 'component': it is not one this request takes",
    });
    expect(expectValidationBody(await bulk('cancel', { filter: { ids: ids.queued }, dryrun: false }))).toEqual([['body', 'dryrun']]);
    expect(await states()).toEqual(before);
  });

  it('is for admins only: a token without platform:admin gets 403, no credential 401', async () => {
    const operator = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run', 'schedules:write'], privileged: true });
    expectErrorBody(await bulk('requeue', { filter: { status: ['failed'] } }, operator.token), 403);
    expectErrorBody(await call(api.url, 'POST', '/queue/jobs/cancel', { json: { filter: { status: ['queued'] } } }), 401);
  });

  it('is mirrored by the MCP tools requeue_queue_jobs and cancel_queue_jobs', async () => {
    const client = await connectMcp(api.url, ROOT_KEY);
    try {
      const dry = await callTool(client, 'requeue_queue_jobs', { filter: { ids: ids.failed } });
      expect(dry.isError, dry.text).toBe(false);
      expect(dry.structured).toMatchObject({ dry_run: true, matched: 3 });
      const empty = await callTool(client, 'cancel_queue_jobs', { filter: {} });
      expect(empty).toMatchObject({ isError: true });
      expect(empty.text).toMatch(/^422: .*filter/);
    } finally {
      await client.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { expectErrorBody, expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { JWT_SECRET, mintAccount, MintedAccount, ROOT_KEY, signJwt } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker } from '../../../test/support/processes';
import { JOB_KEYS } from '../../../test/support/wire-shapes';

const LOCK_GRACE = 3;
interface JobRow {
  status: string;
  attempt: number;
  max_attempts: number;
  error: string | null;
}

describe('queue operations (jwt mode with the security key as root)', () => {
  let api: RunningApi;
  let databaseUrl: string;
  let admin: MintedAccount;
  let plain: MintedAccount;
  const env = (): Record<string, string> => ({
    DATABASE_URL: databaseUrl,
    OS_SECURITY_KEY: ROOT_KEY,
    JWT_SECRET,
    DEMO_COMPONENTS: 'true',
    QUEUE_LOCK_GRACE_SECONDS: String(LOCK_GRACE),
  });

  const post = async (agent: string, message: string, token = ROOT_KEY): Promise<string> => {
    const response = await call(api.url, 'POST', `/agents/${agent}/runs`, { token, json: { message, background: true } });
    expect(response.status, response.text).toBe(202);
    return response.body.run_id;
  };
  const job = async (id: string): Promise<JobRow> =>
    (await query<JobRow & Record<string, unknown>>(databaseUrl, 'SELECT * FROM queue_jobs WHERE id = $1', [id]))[0];
  const statusOf = async (id: string): Promise<string> => (await job(id)).status;
  const requeue = (id: string, params = '', token = ROOT_KEY) => call(api.url, 'POST', `/queue/jobs/${id}/requeue${params}`, { token });

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi(env());
    admin = await mintAccount(api.url, ROOT_KEY, { scopes: ['platform:admin'], privileged: true });
    plain = await mintAccount(api.url, ROOT_KEY);
  });
  afterAll(() => api?.stop());

  describe('without a worker', () => {
    it('lists jobs with every field of the spec and the page metadata', async () => {
      const ids = [await post('echo-agent', 'a'), await post('echo-agent', 'b'), await post('sleep-agent', '1')];
      const response = await call(api.url, 'GET', '/queue/jobs?limit=2&sort_by=created_at&sort_order=asc', { token: ROOT_KEY });
      expect(response.status, response.text).toBe(200);
      expect(Object.keys(response.body.data[0]).sort()).toEqual(JOB_KEYS);
      expect(response.body.data.map((j: { id: string }) => j.id)).toEqual(ids.slice(0, 2));
      expect(response.body.data[0]).toMatchObject({
        status: 'queued',
        attempt: 0,
        max_attempts: 1,
        job_type: 'run',
        payload: { message: 'a' },
        locked_by: null,
        completed_at: null,
      });
      expect(response.body.meta).toEqual({ page: 1, limit: 2, total_pages: 2, total_count: 3, search_time_ms: expect.any(Number) });
      const second = await call(api.url, 'GET', '/queue/jobs?limit=2&page=2&sort_order=asc', { token: ROOT_KEY });
      expect(second.body.data.map((j: { id: string }) => j.id)).toEqual([ids[2]]);
    });

    it('defaults to limit 20, newest first, and ignores an unknown sort_by', async () => {
      const ids = async (query: string) =>
        (await call(api.url, 'GET', `/queue/jobs${query}`, { token: ROOT_KEY })).body.data.map((j: { id: string }) => j.id);
      const response = await call(api.url, 'GET', '/queue/jobs?sort_by=no_such_field', { token: ROOT_KEY });
      expect(response.status).toBe(200);
      expect(response.body.meta.limit).toBe(20);
      const oldestFirst = await ids('?sort_by=created_at&sort_order=asc');
      expect(oldestFirst.length).toBeGreaterThan(1);
      expect(response.body.data.map((j: { id: string }) => j.id)).toEqual([...oldestFirst].reverse());
    });

    it('filters by a repeatable status', async () => {
      const cancelled = await post('echo-agent', 'to cancel');
      await call(api.url, 'POST', `/agents/echo-agent/runs/${cancelled}/cancel`, { token: ROOT_KEY });
      const only = await call(api.url, 'GET', '/queue/jobs?status=cancelled', { token: ROOT_KEY });
      expect(only.body.data.map((j: { id: string }) => j.id)).toEqual([cancelled]);
      const both = await call(api.url, 'GET', '/queue/jobs?status=cancelled&status=queued&limit=1000', { token: ROOT_KEY });
      expect(both.body.meta.total_count).toBe(4);
      expect(new Set(both.body.data.map((j: { status: string }) => j.status))).toEqual(new Set(['queued', 'cancelled']));
      // A list written as axios and qs write one (status[]=..., status[0]=...) filters the same, not as an unknown name.
      const bracketed = await call(api.url, 'GET', '/queue/jobs?status[]=cancelled', { token: ROOT_KEY });
      expect(bracketed.body.data.map((j: { id: string }) => j.id)).toEqual([cancelled]);
      const mixed = await call(api.url, 'GET', '/queue/jobs?status%5B0%5D=cancelled&status=queued&limit=1000', { token: ROOT_KEY });
      expect(mixed.body.meta.total_count).toBe(4);
      expect(expectValidationBody(await call(api.url, 'GET', '/queue/jobs?limit[]=5', { token: ROOT_KEY }))).toEqual([['query', 'limit']]);
      // Any allowed sort_by orders the page by that field.
      const byStatus = await call(api.url, 'GET', '/queue/jobs?status=cancelled&status=queued&sort_by=status&sort_order=desc&limit=1000', {
        token: ROOT_KEY,
      });
      expect(byStatus.body.data.map((j: { status: string }) => j.status)).toEqual(['queued', 'queued', 'queued', 'cancelled']);
    });

    it('answers one job and the stats', async () => {
      const id = await post('echo-agent', 'one');
      const one = await call(api.url, 'GET', `/queue/jobs/${id}`, { token: admin.token });
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ id, status: 'queued', component_id: 'echo-agent' });
      const stats = await call(api.url, 'GET', '/queue/stats', { token: admin.token });
      expect(stats.body).toEqual({
        counts: { queued: 4, running: 0, completed: 0, failed: 0, cancelled: 1, paused: 0 },
        oldest_queued_age_seconds: expect.any(Number),
      });
    });

    it('400: requeue of a job that is neither failed nor cancelled names its state (queued, paused)', async () => {
      const id = await post('echo-agent', 'still queued');
      const queued = await requeue(id);
      expectErrorBody(queued, 400);
      expect(queued.body.detail).toBe(`Job ${id} is queued; only failed and cancelled jobs can be requeued`);
      // No demo component pauses; a paused job is set up directly, as a human-in-the-loop component would leave it.
      await query(databaseUrl, `UPDATE queue_jobs SET status = 'paused' WHERE id = $1`, [id]);
      const paused = await requeue(id);
      expectErrorBody(paused, 400);
      expect(paused.body.detail).toContain('is paused');
      expect(await job(id)).toMatchObject({ status: 'paused', max_attempts: 1 });
      await query(databaseUrl, `UPDATE queue_jobs SET status = 'queued' WHERE id = $1`, [id]);
    });

    it('401 without a credential', async () => {
      expectErrorBody(await call(api.url, 'GET', '/queue/jobs'), 401);
      expectErrorBody(await requeue('00000000-0000-4000-8000-000000000000', '', ''), 401);
    });

    it('403 for a service account or JWT without platform:admin, even with JWT scope enforcement off', async () => {
      const denied = await call(api.url, 'GET', '/queue/jobs', { token: plain.token });
      expectErrorBody(denied, 403);
      expect(denied.body.detail).toBe('Insufficient permissions. Required scope(s): platform:admin');
      expectErrorBody(await requeue('00000000-0000-4000-8000-000000000000', '', plain.token), 403);
      expectErrorBody(await call(api.url, 'GET', '/queue/jobs', { token: await signJwt({ sub: 'carol', scopes: ['agents:run'] }) }), 403);
      expect(
        (await call(api.url, 'GET', '/queue/jobs', { token: await signJwt({ sub: 'dave', scopes: ['platform:admin'] }) })).status,
      ).toBe(200);
      expect((await call(api.url, 'GET', '/queue/stats', { token: admin.token })).status).toBe(200);
      expectErrorBody(await call(api.url, 'GET', '/metrics', { token: plain.token }), 403);
    });

    it('404 for an unknown job (and for an id that is not a UUID)', async () => {
      const missing = await requeue('00000000-0000-4000-8000-000000000000');
      expectErrorBody(missing, 404);
      expect(missing.body.detail).toBe("Queue job '00000000-0000-4000-8000-000000000000' not found");
      expectErrorBody(await call(api.url, 'GET', '/queue/jobs/not-a-uuid', { token: ROOT_KEY }), 404);
    });

    it('422 for invalid query values', async () => {
      expect(expectValidationBody(await call(api.url, 'GET', '/queue/jobs?limit=0', { token: ROOT_KEY }))).toEqual([['query', 'limit']]);
      expect(expectValidationBody(await call(api.url, 'GET', '/queue/jobs?limit=1001', { token: ROOT_KEY }))).toEqual([['query', 'limit']]);
      expect(expectValidationBody(await call(api.url, 'GET', '/queue/jobs?page=0', { token: ROOT_KEY }))).toEqual([['query', 'page']]);
      expect(expectValidationBody(await call(api.url, 'GET', '/queue/jobs?status=failed&status=lost', { token: ROOT_KEY }))).toEqual([
        ['query', 'status'],
      ]);
      expect(expectValidationBody(await call(api.url, 'GET', '/queue/jobs?sort_order=sideways', { token: ROOT_KEY }))).toEqual([
        ['query', 'sort_order'],
      ]);
      const id = await post('echo-agent', 'x');
      expect(expectValidationBody(await requeue(id, '?force=maybe'))).toEqual([['query', 'force']]);
    });

    it('500 with the standard body and an error_id when the store fails', async () => {
      // A failure nothing foresaw (sum() of a text column): not an outage, not a schema this build does not know.
      await query(databaseUrl, 'ALTER TABLE queue_job_counts ALTER COLUMN delta TYPE text USING delta::text');
      try {
        const response = await call(api.url, 'GET', '/queue/stats', { token: ROOT_KEY });
        expectErrorBody(response, 500);
        expect(response.body).toEqual({ detail: 'Internal server error', error_id: expect.any(String), error_type: 'internal_error' });
      } finally {
        await query(databaseUrl, 'ALTER TABLE queue_job_counts ALTER COLUMN delta TYPE bigint USING delta::bigint');
      }
    });

    it('serves Prometheus text on /metrics for platform:admin', async () => {
      const response = await call(api.url, 'GET', '/metrics', { token: admin.token });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      expect(response.text).toContain('# TYPE queue_jobs gauge');
      expect(response.text).toMatch(/queue_jobs\{status="queued"\} \d+/);
      expect(response.text).toContain('# TYPE queue_jobs_processed_total counter');
      expect(response.text).toContain('# TYPE queue_jobs_failed_total counter');
    });

    it('leaves the queued backlog alone: reads, refused requeues and a store failure change no queued job', async () => {
      // Every job this block posted and did not cancel is still queued, unclaimed, never attempted.
      const rows = await query<{ status: string; attempt: number; locked_by: string | null }>(
        databaseUrl,
        `SELECT status, attempt, locked_by FROM queue_jobs WHERE status <> 'cancelled'`,
      );
      // 3 (list) + 1 (stats) + 1 (requeue 400) + 1 (422): a lost or claimed job changes the count or a row.
      expect(rows).toHaveLength(6);
      expect(rows.every((row) => row.status === 'queued' && row.attempt === 0 && row.locked_by === null)).toBe(true);
      expect((await call(api.url, 'GET', '/queue/stats', { token: ROOT_KEY })).body.counts).toMatchObject({
        queued: 6,
        running: 0,
        paused: 0,
        cancelled: 1,
      });
    });
  });

  describe('the requeue rules of the queue status table, with a real worker', () => {
    let worker: RunningProcess;
    beforeAll(async () => {
      // Clear the backlog so the worker below only sees the jobs of its own tests.
      await query(databaseUrl, `UPDATE queue_jobs SET status = 'cancelled', completed_at = now() WHERE status = 'queued'`);
      worker = await startWorker(env());
    });
    afterAll(() => worker?.stop());

    const failedJob = async (): Promise<string> => {
      const id = await post('fail-agent', 'x');
      await expect.poll(() => statusOf(id)).toBe('failed');
      return id;
    };
    /** A run long enough to be cancelled while it runs however loaded the machine is (each checkpoint is a second). */
    const cancelledWhileRunning = async (seconds: string): Promise<string> => {
      const id = await post('sleep-agent', seconds);
      await expect.poll(() => statusOf(id)).toBe('running');
      await call(api.url, 'POST', `/agents/sleep-agent/runs/${id}/cancel`, { token: ROOT_KEY });
      await expect.poll(() => statusOf(id)).toBe('cancelled');
      return id;
    };

    it('failed within lock_grace and force not true: 409, job unchanged', async () => {
      const id = await failedJob();
      const before = await job(id);
      const response = await requeue(id);
      expectErrorBody(response, 409);
      expect(response.body.detail).toContain(`failed within the last ${LOCK_GRACE}s`);
      expect(await job(id)).toEqual(before);
    });

    it('failed with force=true: requeued, max_attempts raised by one, error kept, re-driven', async () => {
      const id = await failedJob();
      const response = await requeue(id, '?force=true');
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({
        id,
        status: 'queued',
        attempt: 1,
        max_attempts: 2,
        error: 'fail-agent always fails',
        completed_at: null,
        locked_by: null,
      });
      await expect.poll(async () => job(id)).toMatchObject({ status: 'failed', attempt: 2, max_attempts: 2 });
    });

    it('failed more than lock_grace seconds ago: requeued without force', async () => {
      const id = await failedJob();
      await new Promise((resolve) => setTimeout(resolve, LOCK_GRACE * 1000 + 200));
      const response = await requeue(id);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({ status: 'queued', max_attempts: 2 });
    });

    it('cancelled with a live intent and no clear_cancellation: requeued, then re-cancelled at its first checkpoint', async () => {
      const id = await cancelledWhileRunning('5');
      const response = await requeue(id);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({ status: 'queued', max_attempts: 2 });
      await expect.poll(async () => job(id)).toMatchObject({ status: 'cancelled', attempt: 2, error: 'Run was cancelled' });
      // Logged just after the outcome is written: polled, not read at once.
      await expect.poll(() => worker.output()).toMatch(new RegExp(`"job_id":"${id}","attempt":2,"status":"cancelled"`));
    });

    it('cancelled with clear_cancellation=true: requeued, the recorded cancel cleared, and it runs to completion', async () => {
      const id = await cancelledWhileRunning('5');
      const response = await requeue(id, '?clear_cancellation=true');
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({ status: 'queued', max_attempts: 2 });
      expect(await query(databaseUrl, 'SELECT 1 FROM queue_cancellation_intents WHERE run_id = $1', [id])).toEqual([]);
      await expect.poll(() => statusOf(id), { timeout: 15_000 }).toBe('completed');
      const run = await call(api.url, 'GET', `/agents/sleep-agent/runs/${id}`, { token: ROOT_KEY });
      expect(run.body).toMatchObject({ status: 'completed', content: 'Slept 5 s', error: null });
    });

    it('cancelled whose intent is no longer live: requeued and runs to completion', async () => {
      const id = await cancelledWhileRunning('5');
      await query(databaseUrl, `UPDATE queue_cancellation_intents SET requested_at = now() - interval '2 days' WHERE run_id = $1`, [id]);
      const response = await requeue(id);
      expect(response.status, response.text).toBe(200);
      await expect.poll(() => statusOf(id), { timeout: 15_000 }).toBe('completed');
    });

    it('any other state (running, completed) is not requeueable: 400', async () => {
      const running = await post('sleep-agent', '3');
      await expect.poll(() => statusOf(running)).toBe('running');
      // What an operator asks first in an incident: the running list holds it, with the worker that runs it.
      const list = await call(api.url, 'GET', '/queue/jobs?status=running', { token: ROOT_KEY });
      expect(list.body.data).toEqual([expect.objectContaining({ id: running, status: 'running', locked_by: expect.any(String) })]);
      expect(list.body.meta.total_count).toBe(1);
      const response = await requeue(running);
      expectErrorBody(response, 400);
      expect(response.body.detail).toContain('is running');
      const done = await post('echo-agent', 'done');
      await expect.poll(() => statusOf(done)).toBe('completed');
      expect((await requeue(done)).body.detail).toContain('is completed');
    });

    it('counts processed and failed attempts of the workers on /metrics', async () => {
      const text = (await call(api.url, 'GET', '/metrics', { token: ROOT_KEY })).text;
      expect(Number(/queue_jobs_processed_total\{outcome="completed"\} (\d+)/.exec(text)?.[1])).toBeGreaterThanOrEqual(3);
      expect(Number(/queue_jobs_failed_total (\d+)/.exec(text)?.[1])).toBeGreaterThanOrEqual(4);
    });
  });
});

describe('the admin gate and QUEUE_ENABLED=false on other replicas', () => {
  let open: RunningApi;
  let disabled: RunningApi;
  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    [open, disabled] = await Promise.all([
      startApi({ DATABASE_URL: databaseUrl }),
      startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, QUEUE_ENABLED: 'false' }),
    ]);
    // Two api boots on two shared cores.
  }, 120_000);
  afterAll(() => Promise.all([open?.stop(), disabled?.stop()]));

  it('lets an anonymous caller through on an instance with no auth configured', async () => {
    expect((await call(open.url, 'GET', '/queue/jobs')).status).toBe(200);
  });

  it('answers 503 on a replica with QUEUE_ENABLED=false, after the admin gate (403 first)', async () => {
    const unavailable = await call(disabled.url, 'GET', '/queue/jobs', { token: ROOT_KEY });
    expectErrorBody(unavailable, 503);
    expect(unavailable.body.detail).toBe('Durable job queue is not enabled on this replica');
    expectErrorBody(await call(disabled.url, 'POST', '/queue/jobs/00000000-0000-4000-8000-000000000000/requeue', { token: ROOT_KEY }), 503);
    // 503 comes before validation too: a disabled queue does not judge the query.
    expectErrorBody(await call(disabled.url, 'GET', '/queue/jobs?limit=0', { token: ROOT_KEY }), 503);
    const account = await mintAccount(disabled.url, ROOT_KEY);
    expectErrorBody(await call(disabled.url, 'GET', '/queue/jobs', { token: account.token }), 403);
    expectErrorBody(await call(disabled.url, 'GET', '/queue/jobs'), 401);
  });
});

describe('the oldest queued age', () => {
  let api: RunningApi;
  let databaseUrl: string;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
  });
  afterAll(() => api?.stop());

  it('counts from when a job became available: a requeued old job or one waiting out its backoff is no backlog', async () => {
    const post = async (message: string) =>
      (await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message, background: true } })).body
        .run_id as string;
    const [old, backingOff] = [await post('old, failed'), await post('backing off')];
    await query(
      databaseUrl,
      `UPDATE queue_jobs SET status = 'failed', created_at = now() - interval '2 days', available_at = now() - interval '2 days', completed_at = now() - interval '1 day' WHERE id = $1`,
      [old],
    );
    await query(
      databaseUrl,
      `UPDATE queue_jobs SET created_at = now() - interval '1 day', available_at = now() + interval '1 hour' WHERE id = $1`,
      [backingOff],
    );
    const oldest = async () => (await call(api.url, 'GET', '/queue/stats', { token: ROOT_KEY })).body.oldest_queued_age_seconds;
    expect(await oldest()).toBeNull();
    expect((await call(api.url, 'POST', `/queue/jobs/${old}/requeue`, { token: ROOT_KEY })).status).toBe(200);
    expect(await oldest()).toBeLessThan(5);
    await query(databaseUrl, `UPDATE queue_jobs SET available_at = now() - interval '90 seconds' WHERE id = $1`, [backingOff]);
    expect(await oldest()).toBeGreaterThanOrEqual(90);
    const scrape = await call(api.url, 'GET', '/metrics', { token: ROOT_KEY });
    expect(Number(/^queue_oldest_queued_age_seconds (\d+)/m.exec(scrape.text)?.[1])).toBeGreaterThanOrEqual(90);
  });
});

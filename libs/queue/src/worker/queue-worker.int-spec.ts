import { once } from 'node:events';

import { Client, Pool } from 'pg';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../../test/support/database';
import { enqueueJobs } from '../enqueue';
import { JobPayload } from '../job.entity';
import { JobContext, JobHandler } from './job-handler';
import { JobStore } from './job-store';
import { enginePool } from './queue-engine-host';
import { QueueWorker } from './queue-worker';
import { QueueWorkerMetrics } from './queue-worker-metrics';

const JOB_TYPE = 'contract-test';

// The handler contract, in process against a real database: what a handler sees through
// JobContext when its worker stops past the deadline.
describe('QueueWorker handler contract', () => {
  let url: string;
  let pool: Pool;

  beforeEach(async () => {
    url = await createTestDatabase();
    // Connections set up as the worker app's job engine sets up its own.
    pool = enginePool(url, 4, JobStore.setUpConnection);
  });

  afterEach(async () => {
    await pool.end();
  });

  function startWorker(
    handler: JobHandler,
    sizes: { concurrency: number; prefetch: number; lockGraceSeconds?: number; horizonMs?: number } = {
      concurrency: 2,
      prefetch: 0,
    },
  ): QueueWorker {
    return new QueueWorker({
      pool,
      connectListener: async () => {
        const client = new Client({ connectionString: url });
        await client.connect();
        return client;
      },
      store: new JobStore(pool, 'contract-test-worker', 3600),
      handlers: new Map([[JOB_TYPE, handler]]),
      pollIntervalMs: 100,
      lockGraceSeconds: sizes.lockGraceSeconds ?? 30,
      concurrency: sizes.concurrency,
      // A wide horizon by default: a worker holds ahead after quick jobs however long a loaded machine stalls one of them.
      prefetch: { jobs: sizes.prefetch, horizonMs: sizes.horizonMs ?? 10_000 },
      retentionSeconds: 0,
      logger: pino({ level: 'silent' }),
      metrics: new QueueWorkerMetrics(new Registry()),
    });
  }

  const job = (id: string, payload: JobPayload = {}) => ({
    id,
    jobType: JOB_TYPE,
    componentType: 'agent',
    componentId: 'x',
    sessionId: 's',
    userId: null,
    payload,
  });

  /** Quick jobs a handler passes straight through: once they have run, the worker knows its jobs are fast and claims ahead. */
  const QUICK = { quick: true };
  async function paceWithQuickJobs(): Promise<void> {
    await enqueueJobs(pool, [job('99999999-0000-4000-8000-000000000001', QUICK), job('99999999-0000-4000-8000-000000000002', QUICK)]);
    await expect
      .poll(async () => (await query<{ n: number }>(url, `SELECT count(*)::int AS n FROM queue_jobs WHERE status = 'completed'`))[0].n)
      .toBe(2);
    await query(url, 'DELETE FROM queue_jobs');
  }

  /** A handler whose jobs take `ms` each, quick ones none. */
  const takingMs = (ms: number): JobHandler => ({
    async handle(claimed) {
      await new Promise((resolve) => setTimeout(resolve, claimed.payload.quick ? 0 : ms));
      return { outcome: 'completed' };
    },
  });

  /** Starts the worker, paces it with quick jobs, then enqueues `count` jobs with ids `${prefix}0`, `${prefix}1`, ... */
  async function enqueuePaced(worker: QueueWorker, prefix: string, count: number): Promise<string[]> {
    await worker.start();
    await paceWithQuickJobs();
    const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
    await enqueueJobs(
      pool,
      ids.map((id) => job(id)),
    );
    return ids;
  }

  const rows = async () =>
    query<{ id: string; status: string; attempt: number; locked_by: string | null }>(
      url,
      'SELECT id, status, attempt, locked_by FROM queue_jobs ORDER BY id',
    );

  it('a stop past the deadline aborts the signal of a handler that holds it, fails its next checkpoint, and gives the job back', async () => {
    const seen: { reason?: unknown; checkpoint?: string } = {};
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const worker = startWorker({
      async handle(_job, context: JobContext) {
        started();
        await once(context.signal, 'abort');
        seen.reason = context.signal.reason;
        await context.checkpoint().catch((error: Error) => (seen.checkpoint = error.message));
        return { outcome: 'completed' };
      },
    });
    await worker.start();
    const [id] = await enqueueJobs(pool, [job('0a8c2f57-5d0e-4a53-a2b4-5a0f1f0c6b11')]);
    await running;

    await worker.stop(200);

    expect(seen).toEqual({ reason: 'Worker is shutting down', checkpoint: 'Worker is shutting down' });
    const [row] = await query<{ status: string; attempt: number; max_attempts: number; error: string }>(
      url,
      'SELECT status, attempt, max_attempts, error FROM queue_jobs WHERE id = $1',
      [id],
    );
    // Released with the attempt given back; the handler's late "completed" is fenced out.
    expect(row).toMatchObject({ status: 'queued', attempt: 1, max_attempts: 2 });
    expect(row.error).toContain('Released by worker contract-test-worker at shutdown');
  });

  it('a signal first read after the stop is already aborted', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let late: AbortSignal | undefined;
    const worker = startWorker({
      async handle(_job, context: JobContext) {
        started();
        await held;
        late = context.signal;
        return { outcome: 'completed' };
      },
    });
    await worker.start();
    await enqueueJobs(pool, [job('6f1d0b8e-0c55-4a5e-9a3e-2b9d4c7e8f21')]);
    await running;

    const stopping = worker.stop(100);
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await stopping;

    expect(late?.aborted).toBe(true);
    expect(late?.reason).toBe('Worker is shutting down');
  });

  it('jobs claimed ahead of a free slot stay queued and spend no attempt until they start; one cancelled meanwhile never acts', async () => {
    const ran: string[] = [];
    const gates = new Map<string, () => void>();
    const worker = startWorker(
      {
        async handle(claimed, context) {
          if (claimed.payload.quick) {
            return { outcome: 'completed' };
          }
          await context.recorded();
          ran.push(claimed.id);
          await new Promise<void>((resolve) => gates.set(claimed.id, resolve));
          return { outcome: 'completed' };
        },
      },
      { concurrency: 1, prefetch: 3 },
    );
    await worker.start();
    await paceWithQuickJobs();
    const ids = [
      'b1c7a9e0-0000-4000-8000-000000000001',
      'b1c7a9e0-0000-4000-8000-000000000002',
      'b1c7a9e0-0000-4000-8000-000000000003',
      'b1c7a9e0-0000-4000-8000-000000000004',
    ];
    await enqueueJobs(
      pool,
      ids.map((id) => job(id)),
    );
    await expect.poll(() => ran.length).toBe(1);
    // One claim took all four: the first runs, three wait reserved for this worker, no attempt spent.
    expect(await rows()).toEqual([
      { id: ids[0], status: 'running', attempt: 1, locked_by: 'contract-test-worker' },
      { id: ids[1], status: 'queued', attempt: 0, locked_by: 'contract-test-worker' },
      { id: ids[2], status: 'queued', attempt: 0, locked_by: 'contract-test-worker' },
      { id: ids[3], status: 'queued', attempt: 0, locked_by: 'contract-test-worker' },
    ]);
    // Cancelled as the runs service does it while the job waits in the worker's buffer.
    await query(url, `UPDATE queue_jobs SET status = 'cancelled', completed_at = now(), locked_by = NULL WHERE id = $1`, [ids[1]]);

    gates.get(ids[0])!();
    await expect.poll(() => ran.length).toBe(2);
    gates.get(ids[2])!();
    await expect.poll(() => ran.length).toBe(3);
    gates.get(ids[3])!();
    await expect.poll(async () => (await rows()).map((row) => row.status)).toEqual(['completed', 'cancelled', 'completed', 'completed']);
    expect(ran).toEqual([ids[0], ids[2], ids[3]]);
    expect((await rows()).map((row) => row.attempt)).toEqual([1, 0, 1, 1]);
    await worker.stop(1000);
  });

  it('a stop hands reserved jobs back to the queue as they were, and releases the running one with its attempt given back', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const worker = startWorker(
      {
        async handle(claimed, context) {
          if (claimed.payload.quick) {
            return { outcome: 'completed' };
          }
          started();
          await once(context.signal, 'abort');
          return { outcome: 'completed' };
        },
      },
      { concurrency: 1, prefetch: 3 },
    );
    const ids = ['c2d8b0f1-0000-4000-8000-000000000001', 'c2d8b0f1-0000-4000-8000-000000000002', 'c2d8b0f1-0000-4000-8000-000000000003'];
    await worker.start();
    await paceWithQuickJobs();
    await enqueueJobs(
      pool,
      ids.map((id) => job(id)),
    );
    await running;
    await expect.poll(async () => (await rows()).filter((row) => row.locked_by !== null).length).toBe(3);
    await worker.stop(100);
    const after = await query<{ status: string; attempt: number; max_attempts: number; locked_by: string | null; error: string | null }>(
      url,
      'SELECT status, attempt, max_attempts, locked_by, error FROM queue_jobs ORDER BY id',
    );
    expect(after[0]).toMatchObject({ status: 'queued', attempt: 1, max_attempts: 2, locked_by: null });
    expect(after[0].error).toContain('Released by worker contract-test-worker at shutdown');
    expect(after.slice(1)).toEqual([
      { status: 'queued', attempt: 0, max_attempts: 1, locked_by: null, error: null },
      { status: 'queued', attempt: 0, max_attempts: 1, locked_by: null, error: null },
    ]);
  });

  it('a job begun from the buffer: a handler awaiting recorded() finds its attempt spent, once', async () => {
    const seen: { status: string; attempt: number }[] = [];
    const worker = startWorker(
      {
        async handle(claimed, context) {
          if (!claimed.payload.quick) {
            await context.recorded();
            const [row] = await query<{ status: string; attempt: number }>(url, 'SELECT status, attempt FROM queue_jobs WHERE id = $1', [
              claimed.id,
            ]);
            seen.push(row);
          }
          return { outcome: 'completed' };
        },
      },
      { concurrency: 1, prefetch: 5 },
    );
    const ids = await enqueuePaced(worker, 'd3e9c1a2-0000-4000-8000-00000000000', 6);
    await expect.poll(async () => (await rows()).map((row) => row.status)).toEqual(ids.map(() => 'completed'));
    expect(seen).toEqual(ids.map(() => ({ status: 'running', attempt: 1 })));
    expect((await rows()).map((row) => row.attempt)).toEqual(ids.map(() => 1));
    await worker.stop(1000);
  });

  it('holds no job ahead while its jobs are slow: queued work stays free for other workers', async () => {
    const worker = startWorker(takingMs(300), { concurrency: 1, prefetch: 100, horizonMs: 100 });
    await worker.start();
    // Two 300 ms jobs set the pace: a slot starts fewer than one job per prefetch horizon (100 ms).
    await enqueueJobs(pool, [job('e4f0d2b3-0000-4000-8000-000000000001'), job('e4f0d2b3-0000-4000-8000-000000000002')]);
    await expect.poll(async () => (await rows()).every((row) => row.status === 'completed'), { timeout: 5000 }).toBe(true);
    const ids = Array.from({ length: 5 }, (_, i) => `e4f0d2b3-0000-4000-8000-00000000001${i}`);
    await enqueueJobs(
      pool,
      ids.map((id) => job(id)),
    );
    // Held ahead is queued with the worker in locked_by. (Counting every locked row flaked on a busy machine: a
    // finished job's row stays locked until its batched outcome is written, while the freed slot has claimed the next.)
    const heldAhead: number[] = [];
    for (let i = 0; i < 8; i += 1) {
      heldAhead.push((await rows()).filter((row) => row.status === 'queued' && row.locked_by !== null).length);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(Math.max(...heldAhead)).toBe(0);
    await worker.stop(1000);
  });

  it('a short job from the buffer that was cancelled meanwhile may run, but its write is fenced out: the cancellation stands, no attempt spent', async () => {
    const ran: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ids = ['f5a1e3c4-0000-4000-8000-000000000001', 'f5a1e3c4-0000-4000-8000-000000000002', 'f5a1e3c4-0000-4000-8000-000000000003'];
    const worker = startWorker(
      {
        async handle(claimed) {
          if (claimed.id === ids[0]) {
            await gate;
          }
          ran.push(claimed.id);
          return { outcome: 'completed' };
        },
      },
      { concurrency: 1, prefetch: 5 },
    );
    await worker.start();
    await paceWithQuickJobs();
    await enqueueJobs(
      pool,
      ids.map((id) => job(id)),
    );
    // The first holds the only slot; the other two wait reserved.
    await expect.poll(async () => (await rows()).filter((row) => row.locked_by !== null).length).toBe(3);
    await query(url, `UPDATE queue_jobs SET status = 'cancelled', completed_at = now(), locked_by = NULL WHERE id = $1`, [ids[1]]);
    release();
    await expect
      .poll(async () => (await rows()).map((row) => [row.status, row.attempt]))
      .toEqual([
        ['completed', 1],
        ['cancelled', 0],
        ['completed', 1],
      ]);
    expect(ran.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    await worker.stop(1000);
  });

  it('hands back what it holds ahead once its jobs turn slow', async () => {
    const worker = startWorker(
      takingMs(2500),
      // A grace of 1 s: a heartbeat, and with it the trim, every 333 ms. A 1 s horizon.
      { concurrency: 1, prefetch: 10, lockGraceSeconds: 1, horizonMs: 1000 },
    );
    await enqueuePaced(worker, 'a6b2f4d5-0000-4000-8000-00000000000', 8);
    // Claimed while its jobs looked quick: all eight, one running and seven ahead.
    await expect.poll(async () => (await rows()).filter((row) => row.locked_by !== null).length).toBe(8);
    // Once the slow job has held the slot past a heartbeat period, its age is the pace: at most three ahead in the
    // horizon. The rest go back to the queue, free for any worker, long before this one could have run them.
    await expect
      .poll(async () => (await rows()).filter((row) => row.status === 'queued' && row.locked_by === null).length, { timeout: 5000 })
      .toBeGreaterThanOrEqual(3);
    await worker.stop(0);
  });

  it('a start the database refuses stops its job and hands the job back at once, no attempt spent', async () => {
    // A real error from PostgreSQL on one job's start (a trigger standing in for, say, a statement timeout).
    await query(
      url,
      `CREATE FUNCTION refuse_start() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         IF OLD.status = 'queued' AND NEW.status = 'running' AND NEW.payload->>'refuse' = 'start' THEN RAISE EXCEPTION 'start refused'; END IF;
         RETURN NEW;
       END $$`,
    );
    await query(url, 'CREATE TRIGGER refuse_start BEFORE UPDATE ON queue_jobs FOR EACH ROW EXECUTE FUNCTION refuse_start()');
    const refused: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const [first, second] = ['b7c3a5e6-0000-4000-8000-000000000001', 'b7c3a5e6-0000-4000-8000-000000000002'];
    const worker = startWorker(
      {
        async handle(claimed, context) {
          if (claimed.id === first) {
            await gate;
          }
          await context.recorded().catch((error: Error) => {
            refused.push(error.message);
            throw error;
          });
          return { outcome: 'completed' };
        },
      },
      { concurrency: 1, prefetch: 5 },
    );
    await worker.start();
    await paceWithQuickJobs();
    await enqueueJobs(pool, [job(first), job(second, { refuse: 'start' })]);
    await expect.poll(async () => (await rows()).filter((row) => row.locked_by !== null).length).toBe(2);
    release();
    await expect.poll(() => refused).toEqual([expect.stringContaining('start refused')]);
    // Back in the queue at once, not after the lock grace (30 s here); the claims that find it meanwhile fail the same way.
    await expect.poll(async () => (await rows())[1], { timeout: 5000 }).toMatchObject({ status: 'queued', attempt: 0, locked_by: null });
    await query(url, 'DROP TRIGGER refuse_start ON queue_jobs');
    await expect
      .poll(async () => (await rows()).map((row) => [row.status, row.attempt]))
      .toEqual([
        ['completed', 1],
        ['completed', 1],
      ]);
    await worker.stop(1000);
  });

  it('a short job from the buffer is started and finished by one write: a failure with attempts left retries after the backoff, a deferral gives its attempt back', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const [held, failing, deferred] = [
      'c8d4b6f7-0000-4000-8000-000000000001',
      'c8d4b6f7-0000-4000-8000-000000000002',
      'c8d4b6f7-0000-4000-8000-000000000003',
    ];
    const worker = startWorker(
      {
        async handle(claimed) {
          if (claimed.id === held) {
            await gate;
          }
          // Returned at once, before the start of a job from the buffer goes out.
          return claimed.id === failing
            ? { outcome: 'failed', error: 'boom' }
            : claimed.id === deferred
              ? { outcome: 'deferred', error: 'not here' }
              : { outcome: 'completed' };
        },
      },
      { concurrency: 1, prefetch: 5 },
    );
    await worker.start();
    await paceWithQuickJobs();
    await enqueueJobs(pool, [job(held)]);
    await expect.poll(async () => (await rows()).map((row) => row.status)).toEqual(['running']);
    await enqueueJobs(pool, [{ ...job(failing), maxAttempts: 2 }, job(deferred)]);
    await expect.poll(async () => (await rows()).filter((row) => row.locked_by !== null).length).toBe(3);
    release();
    const states = () =>
      query<{ id: string; status: string; attempt: number; error: string | null; waits: boolean; locked: boolean }>(
        url,
        `SELECT id, status, attempt, error, available_at > now() AS waits, locked_by IS NOT NULL AS locked
           FROM queue_jobs WHERE id = ANY ($1) ORDER BY id`,
        [[failing, deferred]],
      );
    // Read as soon as both are written, before the failed one's 1 s backoff lets it run again.
    await expect.poll(async () => (await states()).some((row) => row.locked)).toBe(false);
    expect(await states()).toEqual([
      { id: failing, status: 'queued', attempt: 1, error: 'boom', waits: true, locked: false },
      { id: deferred, status: 'queued', attempt: 0, error: 'not here', waits: true, locked: false },
    ]);
    await worker.stop(1000);
  });

  it("a database that hangs past the grace (no error, no answer) sweeps no live worker's job; a dead worker's still goes", async () => {
    const live = 'c8d4b6a7-0000-4000-8000-000000000001';
    await enqueueJobs(pool, [job(live)]);
    // Another worker's running job, heartbeated every 100 ms by this test as that worker would.
    await query(
      url,
      `UPDATE queue_jobs SET status = 'running', attempt = 1, locked_by = 'live-other-worker', locked_at = now(), heartbeat_at = now() WHERE id = $1`,
      [live],
    );
    const other = new Client({ connectionString: url });
    await other.connect();
    let state = 'beating' as 'beating' | 'paused' | 'dead';
    const beats = (async () => {
      while (state !== 'dead') {
        if (state === 'beating') {
          await other.query('UPDATE queue_jobs SET heartbeat_at = now() WHERE id = $1', [live]);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const worker = startWorker({ handle: async () => ({ outcome: 'completed' }) }, { concurrency: 1, prefetch: 0, lockGraceSeconds: 1 });
    await worker.start();
    // The hang: every statement on queue_jobs waits 2 s (twice the grace) behind a lock, the worker's sweep included,
    // and then runs at once. The other worker's next heartbeat comes 50 ms after, as a live one's does.
    state = 'paused';
    await new Promise((resolve) => setTimeout(resolve, 200));
    const locker = new Client({ connectionString: url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE queue_jobs IN ACCESS EXCLUSIVE MODE');
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await locker.query('COMMIT');
    await locker.end();
    await new Promise((resolve) => setTimeout(resolve, 50));
    state = 'beating';
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await rows()).find((row) => row.id === live)).toMatchObject({ status: 'running', locked_by: 'live-other-worker' });
    // That worker dies: its job is swept (failed: its one attempt is spent).
    state = 'dead';
    await beats;
    await other.end();
    await expect.poll(async () => (await rows()).find((row) => row.id === live)?.status, { timeout: 5000 }).toBe('failed');
    await worker.stop(1000);
  });

  it('never sweeps a job it holds, however stale its lock looks; a job locked in its name that it does not hold is swept', async () => {
    // Renewals that do not land, as across an outage: every locked row's last heartbeat reads an hour old.
    await query(
      url,
      `CREATE FUNCTION stale_heartbeats() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         IF NEW.locked_by IS NOT NULL THEN NEW.heartbeat_at := now() - interval '1 hour'; END IF;
         RETURN NEW;
       END $$`,
    );
    await query(url, 'CREATE TRIGGER stale_heartbeats BEFORE UPDATE ON queue_jobs FOR EACH ROW EXECUTE FUNCTION stale_heartbeats()');
    const [held, orphan] = ['d9e5c7a8-0000-4000-8000-000000000001', 'd9e5c7a8-0000-4000-8000-000000000002'];
    // A claim in this worker's name whose answer never reached it: the worker knows nothing of the job.
    await enqueueJobs(pool, [job(orphan)]);
    await query(
      url,
      `UPDATE queue_jobs SET status = 'running', attempt = 1, locked_by = 'contract-test-worker', locked_at = now() WHERE id = $1`,
      [orphan],
    );
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = startWorker(
      {
        async handle() {
          await gate;
          return { outcome: 'completed' };
        },
      },
      // A 1 s grace: sweeps every 333 ms.
      { concurrency: 1, prefetch: 0, lockGraceSeconds: 1 },
    );
    await worker.start();
    await enqueueJobs(pool, [job(held)]);
    await expect.poll(async () => (await rows()).find((row) => row.id === held)?.status).toBe('running');
    await expect
      .poll(async () => (await rows()).find((row) => row.id === orphan), { timeout: 5000 })
      .toMatchObject({ status: 'failed', locked_by: null });
    // Several more sweeps pass over the held job's stale lock.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await rows()).find((row) => row.id === held)).toMatchObject({
      status: 'running',
      attempt: 1,
      locked_by: 'contract-test-worker',
    });
    release();
    await expect.poll(async () => (await rows()).find((row) => row.id === held)?.status).toBe('completed');
    await worker.stop(1000);
  });
});

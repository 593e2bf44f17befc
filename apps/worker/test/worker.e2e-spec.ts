import { readFileSync } from 'node:fs';

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker } from '../../../test/support/processes';

const LOCK_GRACE = 3;

interface JobRow {
  id: string;
  status: string;
  attempt: number;
  max_attempts: number;
  error: string | null;
  locked_by: string | null;
  completed_at: Date | null;
  available_at: Date;
}

interface LogLine {
  time: string;
  msg: string;
  job_id?: string;
  attempt?: number;
  status?: string;
  worker?: string;
  deleted?: number;
}

function logLines(process: RunningProcess): LogLine[] {
  return process
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** Real worker processes against real PostgreSQL: crashes, fencing, shutdown, scale-out. */
describe('worker', () => {
  let api: RunningApi;
  let databaseUrl: string;
  const workers: RunningProcess[] = [];
  const env = (extra: Record<string, string> = {}): Record<string, string> => ({
    DATABASE_URL: databaseUrl,
    DEMO_COMPONENTS: 'true',
    QUEUE_LOCK_GRACE_SECONDS: String(LOCK_GRACE),
    ...extra,
  });
  const worker = async (extra: Record<string, string> = {}): Promise<RunningProcess> => {
    const started = await startWorker(env(extra));
    workers.push(started);
    return started;
  };
  const post = async (agent: string, message: string): Promise<string> => {
    const response = await call(api.url, 'POST', `/agents/${agent}/runs`, { token: ROOT_KEY, json: { message, background: true } });
    expect(response.status, response.text).toBe(202);
    return response.body.run_id;
  };
  const job = async (id: string): Promise<JobRow> =>
    (await query<JobRow & Record<string, unknown>>(databaseUrl, 'SELECT * FROM queue_jobs WHERE id = $1', [id]))[0];
  /**
   * Quick runs first: a worker claims ahead only once it has seen how fast its jobs run (a moving average, 1/8 a job).
   * With HOLDS_AHEAD's horizon the pace of a loaded machine still holds three; a few runs warm the worker up.
   */
  const paceWithQuickRuns = async (): Promise<void> => {
    const quick: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      quick.push(await post('echo-agent', 'pace'));
    }
    await expect
      .poll(async () => (await Promise.all(quick.map(job))).map((row) => row.status), { timeout: 10_000 })
      .toEqual(quick.map(() => 'completed'));
  };
  /**
   * One slot, three jobs ahead, whatever the machine's load: a worker holds jobs ahead of a busy slot only within a
   * heartbeat period (a third of the grace) of its job starting, and only as many as it expects to start within its
   * horizon at the pace its jobs have run. With the defaults (1 s in this file, 100 ms) a loaded CI machine's pace
   * left it holding fewer than three, or none.
   */
  const HOLDS_AHEAD = {
    WORKER_CONCURRENCY: '1',
    WORKER_PREFETCH: '3',
    WORKER_PREFETCH_HORIZON_MS: '60000',
    QUEUE_LOCK_GRACE_SECONDS: '15',
  };
  /**
   * Runs posted back to back, oldest first, then each claimed (the first running, the rest held ahead). Back to back,
   * for the same window: waiting for each claim before the next post took longer than it on a loaded machine.
   */
  const postAllClaimed = async (agent: string, message: string, count: number): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      ids.push(await post(agent, message));
    }
    await expect
      .poll(
        async () => {
          const rows = await Promise.all(ids.map(job));
          return rows[0].status === 'running' && rows.every((row) => row.locked_by !== null);
        },
        { timeout: 5_000 },
      )
      .toBe(true);
    return ids;
  };
  const requeue = (id: string, params = '') => call(api.url, 'POST', `/queue/jobs/${id}/requeue${params}`, { token: ROOT_KEY });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi(env({ OS_SECURITY_KEY: ROOT_KEY, QUEUE_POLL_INTERVAL_MS: '200' }));
  });
  // Every worker a test started is gone before the next test (one left by a failed test would take its jobs);
  // those a group's beforeAll started serve the group's tests and go at the end.
  let startedBefore = 0;
  beforeEach(() => {
    startedBefore = workers.length;
  });
  afterEach(async () => {
    await Promise.all(workers.slice(startedBefore).map((process) => process.stop('SIGKILL')));
  });
  afterAll(async () => {
    await Promise.all(workers.map((process) => process.stop('SIGKILL')));
    await api?.stop();
  });

  it('claims nothing with QUEUE_ENABLED=false', async () => {
    const idle = await worker({ QUEUE_ENABLED: 'false' });
    const id = await post('echo-agent', 'waits');
    await sleep(1500);
    expect(await job(id)).toMatchObject({ status: 'queued', attempt: 0 });
    expect(await idle.stop()).toBe(0);
    expect(logLines(idle).filter((line) => line.job_id === id)).toEqual([]);
    // Positive control: the job was claimable all along; a worker with the queue on runs it at once.
    const enabled = await worker();
    await expect.poll(async () => (await job(id)).status).toBe('completed');
    expect(await job(id)).toMatchObject({ attempt: 1, locked_by: null });
    expect(await enabled.stop()).toBe(0);
  });

  it('a connection the database drops while idle is one short warning, with no connection settings in it', async () => {
    const watched = await worker();
    try {
      // The worker's pools keep their idle connections between polls; the database ends every one of them.
      await query(
        databaseUrl,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      );
      const lost = () =>
        watched
          .output()
          .split('\n')
          .filter((line) => line.includes('idle database connection lost'));
      await expect.poll(() => lost().length).toBeGreaterThan(0);
      for (const line of lost()) {
        const { err } = JSON.parse(line) as { err: Record<string, unknown> };
        expect(err).toMatchObject({ type: 'DatabaseError', code: '57P01', message: expect.stringContaining('terminating connection') });
        expect(err).not.toHaveProperty('client');
        expect(line.length).toBeLessThan(2000);
      }
      // And it goes on working. (The api lost its connections too: a request that meets one before its pool has
      // dropped it answers 503, try again, as it says.)
      let posted = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: ROOT_KEY,
        json: { message: 'after the drop', background: true },
      });
      for (let retry = 0; posted.status === 503 && retry < 5; retry += 1) {
        posted = await call(api.url, 'POST', '/agents/echo-agent/runs', {
          token: ROOT_KEY,
          json: { message: 'after the drop', background: true },
        });
      }
      expect(posted.status, posted.text).toBe(202);
      // A write that meets a dropped connection waits a poll interval and is tried again: on a busy machine, past
      // the poll's default second.
      await expect.poll(async () => (await job(posted.body.run_id)).status, { timeout: 15_000 }).toBe('completed');
    } finally {
      expect(await watched.stop()).toBe(0);
    }
  });

  describe('with one worker', () => {
    let retried: string;
    let cancelled: string;
    let first: RunningProcess;
    beforeAll(async () => {
      // Set up before any worker runs: a failing job with three attempts, and a job cancelled while queued.
      retried = await post('fail-agent', 'x');
      await query(databaseUrl, 'UPDATE queue_jobs SET max_attempts = 3 WHERE id = $1', [retried]);
      cancelled = await post('sleep-agent', '1');
      const cancel = await call(api.url, 'POST', `/agents/sleep-agent/runs/${cancelled}/cancel`, { token: ROOT_KEY });
      expect(cancel.body.status).toBe('cancelled');
      first = await worker();
    });

    it('runs a background run and logs one line per state change', async () => {
      const id = await post('echo-agent', 'hello');
      await expect.poll(async () => (await job(id)).status).toBe('completed');
      expect(await job(id)).toMatchObject({ attempt: 1, locked_by: null, error: null, completed_at: expect.any(Date) });
      // Which release a worker runs, for a rolling update.
      expect(logLines(first).find((line) => line.msg === 'worker ready')).toMatchObject({
        version: JSON.parse(readFileSync('package.json', 'utf8')).version,
      });
      const lines = logLines(first).filter((line) => line.job_id === id);
      expect(lines.map((line) => [line.msg, line.attempt])).toEqual([
        ['job running', 1],
        ['job completed', 1],
      ]);
      const run = await call(api.url, 'GET', `/agents/echo-agent/runs/${id}`, { token: ROOT_KEY });
      expect(run.body).toMatchObject({ status: 'completed', content: 'hello', completed_at: expect.any(Number) });
    });

    it('retries a failure with backoff 2^(N-1) s while attempts remain, then fails for good', async () => {
      await expect.poll(async () => (await job(retried)).status, { timeout: 20_000 }).toBe('failed');
      expect(await job(retried)).toMatchObject({
        attempt: 3,
        max_attempts: 3,
        error: 'fail-agent always fails',
        completed_at: expect.any(Date),
      });
      const lines = logLines(first).filter((line) => line.job_id === retried);
      expect(lines.map((line) => line.status)).toEqual(['running', 'queued', 'running', 'queued', 'running', 'failed']);
      const startedAt = lines.filter((line) => line.msg === 'job running').map((line) => Date.parse(line.time));
      expect(startedAt[1] - startedAt[0]).toBeGreaterThanOrEqual(1000);
      expect(startedAt[2] - startedAt[1]).toBeGreaterThanOrEqual(2000);
    });

    it('never starts a job cancelled while it was queued', async () => {
      expect(await job(cancelled)).toMatchObject({ status: 'cancelled', attempt: 0 });
      expect(first.output()).not.toContain(cancelled);
    });

    it('stops a running job at its next checkpoint when the run is cancelled', async () => {
      const id = await post('sleep-agent', '10');
      await expect.poll(async () => (await job(id)).status).toBe('running');
      await call(api.url, 'POST', `/agents/sleep-agent/runs/${id}/cancel`, { token: ROOT_KEY });
      await expect.poll(async () => (await job(id)).status, { timeout: 3000 }).toBe('cancelled');
      expect(await job(id)).toMatchObject({ attempt: 1, error: 'Run was cancelled', completed_at: expect.any(Date) });
    });

    it('kill -9 mid-job: the job is swept per its budget (not re-run), and requeue re-drives it', async () => {
      const id = await post('sleep-agent', '4');
      await expect.poll(async () => (await job(id)).status).toBe('running');
      await first.stop('SIGKILL');
      const second = await worker();
      await expect.poll(async () => (await job(id)).status, { timeout: 15_000 }).toBe('failed');
      const swept = await job(id);
      expect(swept).toMatchObject({ attempt: 1, max_attempts: 1, locked_by: null, completed_at: expect.any(Date) });
      expect(swept.error).toMatch(
        /lost the job: no heartbeat for over 3 s during attempt 1 of 1; attempt budget exhausted, so it was not re-executed/,
      );
      // Inside the lock grace the operator must say force=true (asked at once: the grace is short here).
      expect((await requeue(id)).status).toBe(409);
      // Instead of a fixed wait: the second worker claims and finishes a new job, so it has been claiming since the sweep.
      const probe = await post('echo-agent', 'probe');
      await expect.poll(async () => (await job(probe)).status).toBe('completed');
      await expect.poll(() => second.output()).toMatch(new RegExp(`"job_id":"${probe}","job_type":"run","attempt"`));
      expect(await job(id)).toMatchObject({ status: 'failed', attempt: 1 });
      expect(second.output()).not.toMatch(new RegExp(`"job_id":"${id}","job_type":"run","attempt"`));
      expect((await requeue(id, '?force=true')).status).toBe(200);
      await expect.poll(async () => (await job(id)).status, { timeout: 15_000 }).toBe('completed');
      expect(await job(id)).toMatchObject({ attempt: 2, max_attempts: 2 });
      await second.stop();
    });
  });

  it("rejects a swept worker's late completion with the fence", async () => {
    const frozen = await worker();
    const id = await post('sleep-agent', '3');
    await expect.poll(async () => (await job(id)).status).toBe('running');
    const frozenId = (await job(id)).locked_by;
    frozen.child.kill('SIGSTOP');
    const rescuer = await worker();
    await expect.poll(async () => (await job(id)).status, { timeout: 15_000 }).toBe('failed');
    expect((await requeue(id, '?force=true')).status).toBe(200);
    await expect.poll(async () => (await job(id)).attempt).toBe(2);
    frozen.child.kill('SIGCONT');
    await expect.poll(() => frozen.output(), { timeout: 10_000 }).toContain('rejected by the fence');
    await expect.poll(async () => (await job(id)).status, { timeout: 15_000 }).toBe('completed');
    const final = await job(id);
    expect(final).toMatchObject({ attempt: 2, locked_by: null });
    const rejected = logLines(frozen).find((line) => line.msg.startsWith('job write rejected by the fence'));
    expect(rejected).toMatchObject({ job_id: id, attempt: 1, worker: frozenId });
    expect(
      logLines(rescuer)
        .filter((line) => line.job_id === id)
        .map((line) => [line.msg, line.attempt]),
    ).toEqual([
      ['job swept to failed', undefined],
      ['job running', 2],
      ['job completed', 2],
    ]);
    await Promise.all([frozen.stop(), rescuer.stop()]);
  });

  it('SIGTERM during runs loses nothing: finishes what it can before the deadline, releases the rest, exits 0', async () => {
    const draining = await worker({ WORKER_SHUTDOWN_TIMEOUT_SECONDS: '2' });
    const short = [await post('sleep-agent', '1'), await post('sleep-agent', '1')];
    const long = [await post('sleep-agent', '10'), await post('sleep-agent', '10')];
    // Every job has started; on a loaded machine a short one may have finished meanwhile, which changes nothing below.
    await expect
      .poll(async () => {
        const [shortRows, longRows] = await Promise.all([Promise.all(short.map(job)), Promise.all(long.map(job))]);
        return shortRows.every((row) => ['running', 'completed'].includes(row.status)) && longRows.every((row) => row.status === 'running');
      })
      .toBe(true);
    const started = Date.now();
    expect(await draining.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(8000);
    for (const id of short) {
      expect(await job(id)).toMatchObject({ status: 'completed', attempt: 1 });
    }
    for (const id of long) {
      const released = await job(id);
      expect(released).toMatchObject({ status: 'queued', attempt: 1, max_attempts: 2, locked_by: null });
      expect(released.error).toMatch(/^Released by worker .* at shutdown during attempt 1 before it finished; the attempt was given back$/);
    }
    expect(draining.output()).toContain('job released at shutdown');
    const next = await worker();
    for (const id of long) {
      await expect.poll(async () => (await job(id)).status, { timeout: 30_000 }).toBe('completed');
      expect(await job(id)).toMatchObject({ attempt: 2 });
    }
    await next.stop();
  });

  it('SIGTERM with jobs claimed ahead (WORKER_PREFETCH): the running one goes back with its attempt given back, the reserved ones as they were', async () => {
    const draining = await worker({ ...HOLDS_AHEAD, WORKER_SHUTDOWN_TIMEOUT_SECONDS: '1' });
    await paceWithQuickRuns();
    const ids = await postAllClaimed('sleep-agent', '30', 3);
    // One runs, two wait reserved in the worker's buffer (queued, locked by it, no attempt spent).
    const held = await Promise.all(ids.map(job));
    expect(held.map((row) => [row.status, row.attempt])).toEqual([
      ['running', 1],
      ['queued', 0],
      ['queued', 0],
    ]);
    expect(await draining.stop('SIGTERM')).toBe(0);
    const released = await job(ids[0]);
    expect(released).toMatchObject({ status: 'queued', attempt: 1, max_attempts: 2, locked_by: null });
    expect(released.error).toMatch(/^Released by worker .* at shutdown/);
    for (const [index, id] of ids.entries()) {
      if (index > 0) {
        // As they were, their place in the queue included.
        expect(await job(id)).toMatchObject({ status: 'queued', attempt: 0, max_attempts: 1, locked_by: null, error: null });
        expect((await job(id)).available_at).toEqual(held[index].available_at);
      }
    }
    const lines = logLines(draining).filter((line) => ids.includes(line.job_id!));
    expect(lines.filter((line) => line.msg === 'job running').map((line) => line.job_id)).toEqual([ids[0]]);
    expect(lines.filter((line) => line.msg === 'job released at shutdown; its attempt was given back').map((line) => line.job_id)).toEqual([
      ids[0],
    ]);
    // The released job's handler stops, and its late outcome is fenced out by design: nothing to warn about.
    expect(lines.filter((line) => line.msg.startsWith('job write rejected by the fence'))).toEqual([]);
    expect(
      lines
        .filter((line) => line.msg === 'reserved job handed back at shutdown; it never started')
        .map((line) => line.job_id)
        .sort(),
    ).toEqual(ids.slice(1).sort());
    // Thirty-second jobs would only slow the tests below.
    await query(databaseUrl, `UPDATE queue_jobs SET status = 'cancelled', completed_at = now() WHERE id = ANY($1)`, [ids]);
  });

  it('kill -9 with jobs claimed ahead (WORKER_PREFETCH): the reserved jobs go back untouched and run once on another worker, spending no extra attempt', async () => {
    // The default budget of one attempt: the job that was running is failed by the sweep, the reserved ones must not be.
    const crashing = await worker(HOLDS_AHEAD);
    await paceWithQuickRuns();
    const ids = await postAllClaimed('sleep-agent', '3', 3);
    const lockedBy = (await job(ids[0])).locked_by;
    expect((await Promise.all(ids.map(job))).map((row) => [row.status, row.attempt, row.locked_by])).toEqual([
      ['running', 1, lockedBy],
      ['queued', 0, lockedBy],
      ['queued', 0, lockedBy],
    ]);
    expect(await crashing.stop('SIGKILL')).toBeNull();
    expect(logLines(crashing).filter((line) => ids.includes(line.job_id!) && line.msg === 'job completed')).toHaveLength(0);

    const rescuer = await worker();
    await expect
      .poll(async () => (await Promise.all(ids.map(job))).map((row) => row.status), { timeout: 30_000 })
      .toEqual(['failed', 'completed', 'completed']);
    expect(await job(ids[0])).toMatchObject({ attempt: 1, max_attempts: 1, locked_by: null });
    expect((await job(ids[0])).error).toMatch(/lost the job: no heartbeat .* attempt budget exhausted/);
    for (const id of ids.slice(1)) {
      expect(await job(id)).toMatchObject({ attempt: 1, max_attempts: 1, locked_by: null, error: null });
    }
    const lines = logLines(rescuer).filter((line) => ids.includes(line.job_id!));
    expect(lines.filter((line) => line.msg === 'job swept to failed').map((line) => line.job_id)).toEqual([ids[0]]);
    expect(
      lines
        .filter((line) => line.msg === 'reserved job handed back to the queue: its worker was lost before starting it')
        .map((line) => line.job_id)
        .sort(),
    ).toEqual(ids.slice(1).sort());
    expect(
      lines
        .filter((line) => line.msg === 'job completed')
        .map((line) => line.job_id)
        .sort(),
    ).toEqual(ids.slice(1).sort());
    await rescuer.stop();
  }, 60_000);

  it('caps the retry backoff at 60 s: 2^(N-1) s after failed attempt N, at most a minute', async () => {
    // Failing jobs already past earlier attempts: the next failure is attempt 6 (32 s), 7 (64 s, capped) and 9 (256 s, capped).
    const ids = [await post('fail-agent', 'a'), await post('fail-agent', 'b'), await post('fail-agent', 'c')];
    await query(databaseUrl, 'UPDATE queue_jobs SET max_attempts = 10, attempt = $2 WHERE id = $1', [ids[0], 5]);
    await query(databaseUrl, 'UPDATE queue_jobs SET max_attempts = 10, attempt = $2 WHERE id = $1', [ids[1], 6]);
    await query(databaseUrl, 'UPDATE queue_jobs SET max_attempts = 10, attempt = $2 WHERE id = $1', [ids[2], 8]);
    const retrier = await worker();
    const backoff = async (id: string) =>
      (
        await query<{ status: string; attempt: number; seconds: number }>(
          databaseUrl,
          'SELECT status, attempt, extract(epoch FROM available_at - updated_at)::float AS seconds FROM queue_jobs WHERE id = $1',
          [id],
        )
      )[0];
    await expect
      .poll(async () => (await Promise.all(ids.map(backoff))).map((row) => [row.status, row.attempt]), { timeout: 20_000 })
      .toEqual([
        ['queued', 6],
        ['queued', 7],
        ['queued', 9],
      ]);
    const [below, capped, far] = await Promise.all(ids.map(backoff));
    expect(below.seconds).toBeCloseTo(32, 0);
    expect(capped.seconds).toBeCloseTo(60, 0);
    expect(far.seconds).toBeCloseTo(60, 0);
    await retrier.stop();
    await query(databaseUrl, `UPDATE queue_jobs SET status = 'cancelled', completed_at = now() WHERE id = ANY($1)`, [ids]);
  });

  it('two worker processes and 2,000 jobs: every attempt executed exactly once', async () => {
    const pair = [await worker(), await worker()];
    const ids: string[] = [];
    let posted = 0;
    // 20 concurrent producers over HTTP while both workers claim.
    const producers = Array.from({ length: 20 }, async () => {
      while (posted < 2000) {
        posted += 1;
        ids.push(await post('echo-agent', 'many'));
      }
    });
    await Promise.all(producers);
    expect(new Set(ids).size).toBe(2000);
    const completed = async () =>
      (
        await query<{ n: number }>(databaseUrl, `SELECT count(*)::int AS n FROM queue_jobs WHERE id = ANY($1) AND status = 'completed'`, [
          ids,
        ])
      )[0].n;
    await expect.poll(completed, { timeout: 120_000, interval: 500 }).toBe(2000);
    const attempts = await query<{ attempt: number; n: number }>(
      databaseUrl,
      'SELECT attempt, count(*)::int AS n FROM queue_jobs WHERE id = ANY($1) GROUP BY attempt',
      [ids],
    );
    expect(attempts).toEqual([{ attempt: 1, n: 2000 }]);
    // Handler invocations, counted from each worker's "job running" line (logged as the handler is called).
    const invocations = new Map<string, number>();
    const wanted = new Set(ids);
    const perWorker = pair.map((process) => {
      const started = logLines(process).filter((line) => line.msg === 'job running' && wanted.has(line.job_id!));
      started.forEach((line) => invocations.set(line.job_id!, (invocations.get(line.job_id!) ?? 0) + 1));
      return started.length;
    });
    expect(invocations.size).toBe(2000);
    expect([...invocations.values()].every((count) => count === 1)).toBe(true);
    expect(perWorker[0] + perWorker[1]).toBe(2000);
    expect(perWorker.every((count) => count > 0)).toBe(true);
    await Promise.all(pair.map((process) => process.stop()));
  }, 240_000);

  it("retention deletes only terminal jobs past QUEUE_RETENTION_SECONDS, and a deleted job's run keeps the state it ended in (here: swept after kill -9)", async () => {
    const id = await post('sleep-agent', '30');
    const crashed = await worker();
    await expect.poll(async () => (await job(id)).status, { timeout: 20_000 }).toBe('running');
    await crashed.stop('SIGKILL');
    // The sweeper of another worker fails it (max_attempts 1); the run row itself was never written.
    const sweeper = await worker();
    await expect.poll(async () => (await job(id)).status, { timeout: 20_000 }).toBe('failed');
    await sweeper.stop();
    // Retention is an hour: the crashed job ended two hours ago (its creation and end moved back, rather than waiting),
    // a cancelled job ended just now, and a paused job (not terminal) was created two hours ago.
    await query(
      databaseUrl,
      `UPDATE queue_jobs SET created_at = now() - interval '2 hours', completed_at = now() - interval '2 hours' WHERE id = $1`,
      [id],
    );
    const beforeExpiry = (await call(api.url, 'GET', `/agents/sleep-agent/runs/${id}`, { token: ROOT_KEY })).body;
    expect(beforeExpiry).toMatchObject({ status: 'failed', error: expect.stringContaining('lost the job') });
    const recent = await post('echo-agent', 'recent');
    await call(api.url, 'POST', `/agents/echo-agent/runs/${recent}/cancel`, { token: ROOT_KEY });
    expect(await job(recent)).toMatchObject({ status: 'cancelled', completed_at: expect.any(Date) });
    const paused = await post('echo-agent', 'paused');
    await query(
      databaseUrl,
      `UPDATE queue_jobs SET status = 'paused', created_at = now() - interval '2 hours', updated_at = now() - interval '2 hours' WHERE id = $1`,
      [paused],
    );

    const cleaner = await worker({ QUEUE_RETENTION_SECONDS: '3600' });
    await expect.poll(async () => (await job(id)) === undefined, { timeout: 20_000 }).toBe(true);
    // One DELETE statement chose the rows: once the old one is gone, the pass that removed it has kept these.
    await expect
      .poll(() => logLines(cleaner).find((line) => line.msg === 'deleted terminal jobs past retention'), { timeout: 10_000 })
      .toMatchObject({ deleted: 1 });
    expect(await job(recent)).toMatchObject({ status: 'cancelled' });
    expect(await job(paused)).toMatchObject({ status: 'paused' });
    const afterExpiry = await call(api.url, 'GET', `/agents/sleep-agent/runs/${id}`, { token: ROOT_KEY });
    expect(afterExpiry.body).toEqual({ ...beforeExpiry, updated_at: expect.any(Number) });
    await cleaner.stop();
  }, 90_000);
});

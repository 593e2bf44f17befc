import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../../test/support/database';
import { enqueueJobs } from '../enqueue';
import { JOB_STATUSES } from '../job-status';
import { JobStore } from './job-store';
import { enginePool } from './queue-engine-host';

const JOB_TYPE = 'count-test';

/**
 * The per-status counts (/queue/stats, /metrics, the list's total_count) come from deltas the
 * table's triggers append, never from counting the table: after every kind of write a worker or
 * an operator makes, they must equal count(*) exactly. And every running job holds its worker's lock.
 */
describe('queue job counts', () => {
  let url: string;
  let pool: Pool;
  const worker = () => new JobStore(pool, 'counts-worker', 3600);

  beforeAll(async () => {
    url = await createTestDatabase();
    // Connections set up as the worker app's job engine sets up its own.
    pool = enginePool(url, 4, JobStore.setUpConnection);
  });
  afterAll(() => pool.end());

  async function expectExactCounts(): Promise<void> {
    const counted = await query<{ status: string; n: number }>(url, 'SELECT status, count(*)::int AS n FROM queue_jobs GROUP BY status');
    const kept = await query<{ status: string; n: number }>(
      url,
      'SELECT status, sum(delta)::int AS n FROM queue_job_counts GROUP BY status HAVING sum(delta) <> 0',
    );
    const byStatus = (rows: { status: string; n: number }[]) =>
      Object.fromEntries(JOB_STATUSES.map((status) => [status, rows.find((row) => row.status === status)?.n ?? 0]));
    expect(byStatus(kept)).toEqual(byStatus(counted));
    // The running list (GET /queue/jobs?status=running) reads the locked jobs' index: no write may leave a job running without its lock.
    const unlocked = await query<{ n: number }>(
      url,
      `SELECT count(*)::int AS n FROM queue_jobs WHERE status = 'running' AND locked_by IS NULL`,
    );
    expect(unlocked[0].n).toBe(0);
  }

  it('equal count(*) after enqueues, claims, reservations, starts, outcomes, sweeps, requeues, cancels, retention deletes and folds', async () => {
    const store = worker();
    const job = (i: number) => ({
      jobType: JOB_TYPE,
      componentType: 'agent',
      componentId: 'x',
      sessionId: `s${i}`,
      userId: null,
      payload: {},
    });
    await enqueueJobs(
      pool,
      Array.from({ length: 300 }, (_, i) => job(i)),
    );
    await expectExactCounts();

    // 100 claimed: 40 start at once, 60 reserved (still queued); 30 of those then start.
    const claimed = await store.claim(100, 40, [JOB_TYPE]);
    const reserved = claimed.filter((row) => !row.started);
    await store.start(reserved.slice(0, 30));
    await expectExactCounts();
    expect((await query<{ n: number }>(url, `SELECT count(*)::int AS n FROM queue_jobs WHERE status = 'running'`))[0].n).toBe(70);

    // Outcomes of every kind, one statement.
    const running = await query<{ id: string; attempt: number }>(
      url,
      `SELECT id, attempt FROM queue_jobs WHERE status = 'running' ORDER BY id`,
    );
    const outcomes = ['completed', 'failed', 'cancelled', 'paused'] as const;
    await store.finish(
      running
        .slice(0, 40)
        .map((row, i) => ({ id: row.id, jobType: JOB_TYPE, attempt: row.attempt, outcome: outcomes[i % 4], error: null })),
    );
    await expectExactCounts();

    // The rest of the running jobs, and the reservations, lose their worker: swept.
    await query(url, `UPDATE queue_jobs SET heartbeat_at = now() - interval '1 hour' WHERE locked_by IS NOT NULL`);
    await store.sweep(60, [], await store.stale(60, []));
    await expectExactCounts();

    // An operator requeues the failed ones and cancels some queued ones.
    await query(
      url,
      `UPDATE queue_jobs SET status = 'queued', max_attempts = max_attempts + 1, completed_at = NULL WHERE status = 'failed'`,
    );
    await query(
      url,
      `UPDATE queue_jobs SET status = 'cancelled', completed_at = now() WHERE id IN (SELECT id FROM queue_jobs WHERE status = 'queued' LIMIT 25)`,
    );
    await store.maintain();
    await expectExactCounts();

    // Retention deletes terminal jobs; a fold between writes changes nothing.
    await query(
      url,
      `UPDATE queue_jobs SET created_at = now() - interval '2 days', completed_at = now() - interval '2 days' WHERE status IN ('completed', 'cancelled')`,
    );
    const deleted = await store.deleteExpired(86400, async () => undefined);
    expect(deleted).toBeGreaterThan(0);
    await expectExactCounts();
    await store.maintain();
    await expectExactCounts();
    const rows = await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM queue_job_counts');
    expect(rows[0].n).toBeLessThanOrEqual(JOB_STATUSES.length);

    // Emptied by TRUNCATE: the counts go with it.
    await query(url, 'TRUNCATE queue_jobs CASCADE');
    await expectExactCounts();
  });
});

import { ClientBase, Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../../test/support/database';
import { JobStore } from './job-store';
import { enginePool } from './queue-engine-host';

const JOB_TYPE = 'plan-test';

/**
 * The claim is a prepared statement, and PostgreSQL keeps the generic plan it makes after a few runs. Made on
 * a new deployment's empty queue_jobs, a plan free to scan the table finds the rows it locked by reading all
 * of them, and keeps doing so, however long the queue grows, until the next ANALYZE. The job engine's
 * connections (JobStore.setUpConnection) rule that plan out.
 */
describe('the prepared claim', () => {
  let pool: Pool | null = null;
  afterEach(() => pool?.end());

  async function cachedClaimPlan(setUp?: (client: ClientBase) => Promise<void>): Promise<string> {
    const url = await createTestDatabase();
    await query(url, 'ANALYZE queue_jobs');
    // One connection, so that every claim and the EXPLAIN below share its prepared statement.
    pool = enginePool(url, 1, setUp);
    const store = new JobStore(pool, 'plan-worker', 3600);
    for (let i = 0; i < 10; i++) {
      expect(await store.claim(1, 1, [JOB_TYPE])).toEqual([]);
    }
    const [{ generic_plans }] = (
      await pool.query<{ generic_plans: string }>(`SELECT generic_plans FROM pg_prepared_statements WHERE name = 'queue_claim'`)
    ).rows;
    expect(Number(generic_plans)).toBeGreaterThan(0);
    const { rows } = await pool.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (COSTS OFF) EXECUTE queue_claim('plan-worker', 1, '{${JOB_TYPE}}', 3600, 1)`,
    );
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  }

  it('made while the table was empty, reads jobs through the claimable index and their row ids, never the whole table', async () => {
    const plan = await cachedClaimPlan(JobStore.setUpConnection);
    expect(plan).toContain('Index Scan using "IDX_queue_jobs_claimable" on queue_jobs');
    expect(plan).toContain('Tid Scan on queue_jobs j');
    expect(plan).not.toMatch(/Seq Scan on queue_jobs/);
  });

  it('would scan the whole table on connections that allow it (what the rule is for)', async () => {
    expect(await cachedClaimPlan()).toMatch(/Seq Scan on queue_jobs/);
  });
});

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

// The new release's components: the api has rolled out, one worker has not.
const NEW_MODULE = join(mkdtempSync(join(tmpdir(), 'skew-')), 'agents.mjs');
writeFileSync(
  NEW_MODULE,
  `export default [{ kind: 'agent', id: 'new-agent', name: 'New agent', run: async (ctx) => 'new:' + ctx.message }];\n`,
);

interface JobBody {
  status: string;
  attempt: number;
  max_attempts: number;
  error: string | null;
  locked_by: string | null;
}

/**
 * A rolling update half-way: the api accepts runs of a component that an older worker does not have.
 * That worker must hand such runs back, spending nothing, rather than fail them.
 */
describe('a worker without the component of a queued run (api and worker on different modules)', () => {
  let databaseUrl: string;
  let api: RunningApi;
  const workers: RunningProcess[] = [];

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', QUEUE_POLL_INTERVAL_MS: '200' };
    api = await startApi({ ...env, COMPONENTS_MODULE: NEW_MODULE });
    workers.push(await startWorker(env));
  });
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await api?.stop();
  });

  const job = async (id: string): Promise<JobBody> => (await call(api.url, 'GET', `/queue/jobs/${id}`, { token: ROOT_KEY })).body;

  it('the older worker hands the run back unspent and says why once; a worker that has the component then runs it', async () => {
    const [older] = workers;
    const posted = await Promise.all(
      ['one', 'two'].map((message) =>
        call(api.url, 'POST', '/agents/new-agent/runs', { token: ROOT_KEY, json: { message, background: true } }),
      ),
    );
    expect(posted.map((response) => response.status)).toEqual([202, 202]);
    const ids: string[] = posted.map((response) => response.body.run_id);

    // The older worker claimed both (their errors say so) and gave them back: queued, no attempt spent, unlocked.
    await waitFor(
      async () => (await Promise.all(ids.map(job))).every((body) => body.error !== null),
      15_000,
      'the older worker to defer both',
    );
    for (const id of ids) {
      const body = await job(id);
      expect(body).toMatchObject({ status: 'queued', attempt: 0, max_attempts: 1, locked_by: null });
      expect(body.error).toMatch(/^Waiting for a worker that has agent 'new-agent': the worker on .+ has none$/);
    }
    // A demo run still goes through the same worker meanwhile.
    const echo = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'hi', background: true } });
    await waitFor(async () => (await job(echo.body.run_id)).status === 'completed', 15_000, 'the demo run');
    // Nothing counted as a finished attempt, and the run itself still reads queued.
    const counters = await query<{ outcome: string }>(databaseUrl, `SELECT outcome FROM queue_job_outcome_counters WHERE total > 0`);
    expect(counters.map((row) => row.outcome)).toEqual(['completed']);
    expect((await call(api.url, 'GET', `/agents/new-agent/runs/${ids[0]}`, { token: ROOT_KEY })).body.status).toBe('queued');
    // One warning for the component, not one per run or per retry.
    expect(older.output().match(/This worker has no agent 'new-agent'/g)).toHaveLength(1);
    expect(older.output()).toContain('Does this worker load the same COMPONENTS_MODULE as the api?');

    // The rolling update goes on: the updated worker arrives and the older one goes (its deferrals would
    // otherwise race the updated worker for the jobs). The updated one runs both, each in its first attempt.
    workers.push(
      await startWorker({
        DATABASE_URL: databaseUrl,
        DEMO_COMPONENTS: 'true',
        COMPONENTS_MODULE: NEW_MODULE,
        QUEUE_POLL_INTERVAL_MS: '200',
      }),
    );
    expect(await older.stop()).toBe(0);
    await waitFor(
      async () => (await Promise.all(ids.map(job))).every((body) => body.status === 'completed'),
      30_000,
      'the updated worker to run both',
    );
    for (const [index, id] of ids.entries()) {
      expect(await job(id)).toMatchObject({ status: 'completed', attempt: 1, max_attempts: 1, error: null });
      const run = (await call(api.url, 'GET', `/agents/new-agent/runs/${id}`, { token: ROOT_KEY })).body;
      expect(run).toMatchObject({ status: 'completed', content: `new:${['one', 'two'][index]}` });
    }
  }, 90_000);
});

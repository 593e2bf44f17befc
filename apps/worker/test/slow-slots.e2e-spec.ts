import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

/**
 * A worker holds jobs ahead of its free slots at the pace its jobs have run. When every slot is then taken
 * by a job far slower than that (a hung handler, a slow model), the jobs it holds would wait for it while
 * another worker idles: it hands them back at its next heartbeat, and the idle worker runs them.
 */
describe('a worker whose every slot is taken by a slow job', () => {
  let databaseUrl: string;
  let api: RunningApi;
  const workers: RunningProcess[] = [];
  // Wide margins for a loaded machine: a worker holds jobs ahead while its jobs take under 4 s (two slots, a 2 s
  // horizon), and a slot counts as slow once it has held its job for a heartbeat period (5 s of a 15 s lock grace).
  const env = () => ({
    DATABASE_URL: databaseUrl,
    DEMO_COMPONENTS: 'true',
    QUEUE_LOCK_GRACE_SECONDS: '15',
    WORKER_PREFETCH_HORIZON_MS: '2000',
    WORKER_CONCURRENCY: '2',
  });

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    workers.push(await startWorker(env()));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop('SIGKILL')));
    await api?.stop();
  });

  const post = async (agent: string, message: string) =>
    (await call(api.url, 'POST', `/agents/${agent}/runs`, { token: ROOT_KEY, json: { message, background: true } })).body.run_id as string;
  const status = async (ids: string[]) =>
    (await query<{ status: string }>(databaseUrl, 'SELECT status FROM queue_jobs WHERE id = ANY ($1::uuid[]) ORDER BY id', [ids])).map(
      (row) => row.status,
    );

  it('hands back the jobs it holds ahead, and an idle worker runs them while the slow ones go on', async () => {
    // A quick job first: the worker now knows its jobs as fast, and holds ahead.
    const quick = await post('echo-agent', 'warm-up');
    await waitFor(async () => (await status([quick]))[0] === 'completed', 15_000, 'the warm-up run');

    const slow = [await post('sleep-agent', '60'), await post('sleep-agent', '60')];
    await waitFor(async () => (await status(slow)).every((s) => s === 'running'), 15_000, 'both slots to be taken');
    const waiting = await Promise.all(Array.from({ length: 5 }, (_, i) => post('echo-agent', `waiting ${i}`)));
    // Held ahead by the busy worker: queued, locked by it.
    await waitFor(
      async () =>
        (
          await query<{ n: number }>(
            databaseUrl,
            'SELECT count(*)::int AS n FROM queue_jobs WHERE id = ANY ($1::uuid[]) AND locked_by IS NOT NULL',
            [waiting],
          )
        )[0].n > 0,
      10_000,
      'the busy worker to hold jobs ahead',
    );

    workers.push(await startWorker(env()));
    await waitFor(
      async () => (await status(waiting)).every((s) => s === 'completed'),
      30_000,
      'the held jobs to be run by the idle worker',
    );
    expect(await status(slow)).toEqual(['running', 'running']);
    expect(workers[0].output()).toMatch(/handed back jobs held ahead/);
  }, 90_000);
});

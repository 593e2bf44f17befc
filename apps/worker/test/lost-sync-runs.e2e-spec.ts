import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

const GRACE = { QUEUE_LOCK_GRACE_SECONDS: '3' };

/**
 * A run an api executes itself (sync or streamed) has no queue job: when that api dies mid-run, the run
 * must not read "running" forever. The api renews the run while it runs it; a worker fails it once not.
 */
describe('runs whose api stopped mid-run', () => {
  let databaseUrl: string;
  let api: RunningApi;
  let worker: RunningProcess;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    [api, worker] = await Promise.all([
      startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', ...GRACE }),
      startWorker({ DATABASE_URL: databaseUrl, DEMO_COMPONENTS: 'true', ...GRACE }),
    ]);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  /** Starts a streamed sleep-agent run on `url`; its id, and the reader of the rest of its events. */
  async function startStreamed(url: string, seconds: number) {
    const response = await fetch(`${url}/agents/sleep-agent/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: String(seconds), stream: true }),
    });
    const reader = response.body!.getReader();
    const started = new TextDecoder().decode((await reader.read()).value);
    return { runId: /"run_id":"([0-9a-f-]{36})"/.exec(started)![1], reader };
  }

  const runOf = async (runId: string) => (await call(api.url, 'GET', `/agents/sleep-agent/runs/${runId}`, { token: ROOT_KEY })).body;

  it('a run longer than the lock grace, on a live api, stays running past the grace and completes: its lease is renewed', async () => {
    const { runId, reader } = await startStreamed(api.url, 6);
    await new Promise((resolve) => setTimeout(resolve, 4500));
    expect(await runOf(runId)).toMatchObject({ status: 'running', error: null });
    while (!(await reader.read()).done) {
      // the rest of the events, until the stream ends
    }
    expect(await runOf(runId)).toMatchObject({ status: 'completed', content: 'Slept 6 s' });
  });

  it('a streamed run whose api is killed is failed as lost once the grace has passed', async () => {
    const doomed = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', ...GRACE });
    const { runId, reader } = await startStreamed(doomed.url, 60);
    await doomed.stop('SIGKILL');
    await reader.cancel().catch(() => undefined);

    expect(await runOf(runId)).toMatchObject({ status: 'running' });
    await waitFor(async () => (await runOf(runId)).status === 'failed', 20_000, 'the lost run to be failed');
    expect(await runOf(runId)).toMatchObject({
      error: expect.stringMatching(/^Lost: the api running it stopped/),
      completed_at: expect.any(Number),
    });
    // Said once the update is written: the line may reach the test after the row does.
    await expect.poll(() => worker.output()).toContain('run(s) failed as lost');
  });
});

/**
 * Back from a database outage longer than the grace, every lease looks stale: the worker must not fail the runs of
 * an api that is alive and renews them as soon as it can (it did, at a single look, and the run flipped from
 * failed back to completed when it ended).
 */
describe('runs of a live api across a database outage longer than the lock grace', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let proxy: TcpProxy;
  let proxyPort: number;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const direct = new URL(databaseUrl);
    proxy = new TcpProxy(direct.hostname, Number(direct.port));
    proxyPort = await proxy.listen();
    const viaProxy = new URL(direct);
    viaProxy.port = String(proxyPort);
    const env = { DATABASE_URL: viaProxy.toString(), DEMO_COMPONENTS: 'true', ...GRACE };
    [api, worker] = await Promise.all([startApi({ ...env, OS_SECURITY_KEY: ROOT_KEY }), startWorker(env)]);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await proxy?.cut();
  });

  it('keeps such a run running, and it completes: never failed as lost', async () => {
    const answer = call(api.url, 'POST', '/agents/sleep-agent/runs', { token: ROOT_KEY, json: { message: '10' } });
    // Cut once the run is under way (a fixed delay could fall before its row and lease were written).
    await waitFor(
      async () => (await query(databaseUrl, `SELECT 1 FROM runs WHERE message = '10' AND status = 'running'`)).length > 0,
      10_000,
      'the run to start',
    );
    await proxy.cut();
    // Five seconds without a database: more than the grace (3 s), so the lease is stale when it comes back.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    await proxy.listen(proxyPort);
    const run = await answer;
    expect(run.body).toMatchObject({ status: 'completed', content: 'Slept 10 s', error: null });
    // The stored run was never failed on the way: nothing was swept, nothing rewritten.
    expect(worker.output()).not.toContain('failed as lost');
    expect((await call(api.url, 'GET', `/agents/sleep-agent/runs/${run.body.run_id}`, { token: ROOT_KEY })).body).toMatchObject({
      status: 'completed',
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startProxiedWorker } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

/**
 * The database away for a while (a failover, a network cut) while a worker runs a job. A checkpoint is no
 * answer to "was this run cancelled?" then, and locks left stale by the outage are not the worker's death:
 * the run goes on and completes, where it failed.
 */
describe('a running job while the database is away', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let proxy: TcpProxy;
  let proxyPort: number;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    // A 2 s lock grace, so that an outage of a few seconds leaves every lock stale.
    ({ worker, proxy, proxyPort } = await startProxiedWorker(databaseUrl, { DEMO_COMPONENTS: 'true', QUEUE_LOCK_GRACE_SECONDS: '2' }));
  }, 120_000);
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await proxy?.cut();
    await api?.stop();
  });

  /** A sleep-agent run (it checks its run at every 100 ms step) with the database away for `outageMs` in its middle. */
  async function runThroughOutage(seconds: number, outageMs: number) {
    const posted = await call(api.url, 'POST', '/agents/sleep-agent/runs', {
      token: ROOT_KEY,
      json: { message: String(seconds), background: true },
    });
    expect(posted.status).toBe(202);
    const run = () => call(api.url, 'GET', `/agents/sleep-agent/runs/${posted.body.run_id}`, { token: ROOT_KEY });
    await expect.poll(async () => (await run()).body.status, { timeout: 15_000 }).toBe('running');

    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, outageMs));
    await proxy.listen(proxyPort);

    await expect.poll(async () => (await run()).body.status, { timeout: 30_000, interval: 250 }).not.toMatch(/^(queued|running)$/);
    return (await run()).body;
  }

  it('a checkpoint is not a cancellation: the run goes on and completes', async () => {
    expect(await runThroughOutage(3, 1_000)).toMatchObject({ status: 'completed', content: 'Slept 3 s', error: null });
  }, 60_000);

  it('locks gone stale in an outage longer than the lock grace are not swept from the live worker that holds them', async () => {
    expect(await runThroughOutage(8, 4_000)).toMatchObject({ status: 'completed', content: 'Slept 8 s', error: null });
    expect(worker.output()).not.toMatch(/job swept to/);
  }, 60_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startProxiedWorker } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

/**
 * A component asks at each checkpoint whether its run was cancelled. The database away for a moment (a
 * failover, a network blip) is no answer to that question: the run goes on and completes, where it failed.
 */
describe('a checkpoint while the database is away', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let proxy: TcpProxy;
  let proxyPort: number;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    ({ worker, proxy, proxyPort } = await startProxiedWorker(databaseUrl, { DEMO_COMPONENTS: 'true' }));
  }, 120_000);
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await proxy?.cut();
    await api?.stop();
  });

  it('is not a cancellation: the run goes on and completes', async () => {
    // sleep-agent checks its run at every 100 ms step.
    const posted = await call(api.url, 'POST', '/agents/sleep-agent/runs', { token: ROOT_KEY, json: { message: '3', background: true } });
    expect(posted.status).toBe(202);
    const run = () => call(api.url, 'GET', `/agents/sleep-agent/runs/${posted.body.run_id}`, { token: ROOT_KEY });
    await expect.poll(async () => (await run()).body.status, { timeout: 15_000 }).toBe('running');

    await proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await proxy.listen(proxyPort);

    await expect.poll(async () => (await run()).body.status, { timeout: 30_000, interval: 250 }).not.toMatch(/^(queued|running)$/);
    expect((await run()).body).toMatchObject({ status: 'completed', content: 'Slept 3 s', error: null });
  }, 60_000);
});

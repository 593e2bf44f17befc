import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { RunningProcess, startProxiedWorker } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

/**
 * A database that accepts connections and never answers (a dead peer behind a load balancer, a
 * half-failed-over primary): the worker's event loop runs on, but its queue engines wait forever.
 * /livez says so once a call has waited past the lock grace, so an orchestrator restarts the worker.
 */
describe('worker /livez while its database stalls', () => {
  let worker: RunningProcess;
  let proxy: TcpProxy;
  let probes: string;

  beforeAll(async () => {
    ({ worker, proxy, probes } = await startProxiedWorker(await createTestDatabase(), {
      QUEUE_LOCK_GRACE_SECONDS: '1',
      DEMO_COMPONENTS: 'true',
    }));
  });
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await proxy?.cut();
  });

  it('is live while the database answers, not live while every call hangs past the grace, and live again once it answers', async () => {
    expect(await call(probes, 'GET', '/livez')).toMatchObject({ status: 200, body: { status: 'ok' } });

    proxy.stall(true);
    // Each engine's calls cross the grace on their own clock.
    const bothStuck = (detail: string | undefined) => /the job queue: /.test(detail ?? '') && /schedule fires: /.test(detail ?? '');
    await expect.poll(async () => bothStuck((await call(probes, 'GET', '/livez')).body.detail), { timeout: 15_000 }).toBe(true);
    const { status, body } = await call(probes, 'GET', '/livez');
    expect(status).toBe(503);
    expect(body.detail).toMatch(/^Not live: /);
    expect(body.detail).toMatch(/the job queue: a database call has waited \d+ s for an answer, past QUEUE_LOCK_GRACE_SECONDS \(1\)/);
    expect(body.detail).toMatch(/schedule fires: a database call has waited \d+ s/);
    expect(body.detail).toMatch(/\. Restart this worker$/);
    // The process itself is fine: other probes still answer.
    expect((await call(probes, 'GET', '/readyz')).status).toBe(503);

    proxy.stall(false);
    await expect.poll(async () => (await call(probes, 'GET', '/livez')).status, { timeout: 15_000 }).toBe(200);
  }, 60_000);
});

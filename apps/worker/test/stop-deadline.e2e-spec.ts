import { afterAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

describe('a worker stopping while its database stalls', () => {
  let api: RunningApi | undefined;
  let worker: RunningProcess | undefined;
  let proxy: TcpProxy | undefined;
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await proxy?.cut();
    await api?.stop();
  });

  it('still ends, a few seconds after its drain deadline, with exit code 1 and a line saying so', async () => {
    const databaseUrl = await createTestDatabase();
    const url = new URL(databaseUrl);
    proxy = new TcpProxy(url.hostname, Number(url.port));
    url.port = String(await proxy.listen());
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    worker = await startWorker({ DATABASE_URL: url.toString(), DEMO_COMPONENTS: 'true', WORKER_SHUTDOWN_TIMEOUT_SECONDS: '1' });

    const run = await call(api.url, 'POST', '/agents/sleep-agent/runs', { token: ROOT_KEY, json: { message: '30', background: true } });
    expect(run.status, run.text).toBe(202);
    await waitFor(
      async () =>
        (await query<{ status: string }>(databaseUrl, 'SELECT status FROM queue_jobs WHERE id = $1', [run.body.run_id]))[0]?.status ===
        'running',
      20_000,
      'the job to run',
    );

    // Connections accepted, nothing answered: handing the job back can never finish.
    proxy.stall(true);
    const stopping = Date.now();
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(1);
    // 1 s of drain, 5 s to hand back, some slack for a busy machine; the orchestrator's kill comes at 15 s.
    expect(Date.now() - stopping).toBeLessThan(12_000);
    expect(worker.output()).toContain('after its deadline: exiting');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freePort } from '../../../scripts/embedded-postgres.mjs';
import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { RunningProcess, spawnNode, startWorker } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

describe('worker health port (WORKER_HEALTH_PORT)', () => {
  let worker: RunningProcess;
  let proxy: TcpProxy;
  let probes: string;

  beforeAll(async () => {
    const url = new URL(await createTestDatabase());
    proxy = new TcpProxy(url.hostname, Number(url.port));
    url.port = String(await proxy.listen());
    const port = await freePort();
    probes = `http://127.0.0.1:${port}`;
    worker = await startWorker({ DATABASE_URL: url.toString(), DB_MIGRATE: 'false', WORKER_HEALTH_PORT: String(port) });
  });
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await proxy?.cut();
  });

  it('is live and ready while the migrated database answers', async () => {
    expect(await call(probes, 'GET', '/livez')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await call(probes, 'GET', '/readyz')).toMatchObject({ status: 200, body: { status: 'ok', checks: { database: 'ok' } } });
  });

  it('answers other paths and methods with the standard error body', async () => {
    expect(await call(probes, 'GET', '/metrics')).toMatchObject({ status: 404, body: { detail: 'No route for GET /metrics' } });
    expect(await call(probes, 'POST', '/readyz')).toMatchObject({ status: 405, body: { detail: 'Method POST not allowed on /readyz' } });
  });

  it('stops being ready, but stays live, when the database becomes unreachable', async () => {
    await proxy.cut();
    const readiness = await call(probes, 'GET', '/readyz');
    expect(readiness.status).toBe(503);
    expect(readiness.body).toEqual({ detail: 'Not ready: the database is unreachable' });
    expect((await call(probes, 'GET', '/livez')).status).toBe(200);
  });

  it('closes the port when it stops on SIGTERM', async () => {
    await worker.stop('SIGTERM');
    await expect(fetch(`${probes}/livez`)).rejects.toThrow();
  });
});

describe('worker health port configuration', () => {
  it('refuses to boot with a port that is not a number, naming the variable', async () => {
    const worker = spawnNode('dist/apps/worker/src/main.js', { DATABASE_URL: 'postgresql://127.0.0.1:1/none', WORKER_HEALTH_PORT: 'eighty' });
    expect(await worker.exited).toBe(1);
    expect(worker.output()).toContain('WORKER_HEALTH_PORT="eighty": must be a whole number from 1 to 65535');
  });
});

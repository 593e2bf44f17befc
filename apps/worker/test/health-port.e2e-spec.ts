import { type AddressInfo, createServer } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { bootFailureOf, RunningApi, RunningProcess, spawnNode, startApi, startProxiedWorker } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

describe('worker health port (WORKER_HEALTH_PORT)', () => {
  let worker: RunningProcess;
  let api: RunningApi;
  let proxy: TcpProxy;
  let proxyPort: number;
  let probes: string;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    // A short drain, so the shutdown test below sees the worker draining a job, then exiting.
    ({ worker, proxy, proxyPort, probes } = await startProxiedWorker(databaseUrl, {
      DEMO_COMPONENTS: 'true',
      WORKER_SHUTDOWN_TIMEOUT_SECONDS: '4',
    }));
  });
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await api?.stop();
    await proxy?.cut();
  });

  it('says at boot that PUBLIC_URL is unset, and whom its fires call instead', () => {
    expect(worker.output()).toMatch(/PUBLIC_URL is unset: schedule fires call http:\/\/[^ ]+, an api on this machine/);
  });

  it('is live and ready while the migrated database answers', async () => {
    expect(await call(probes, 'GET', '/livez')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await call(probes, 'GET', '/readyz')).toMatchObject({ status: 200, body: { status: 'ok', checks: { database: 'ok' } } });
  });

  it('answers other paths and methods with the standard error body', async () => {
    expect(await call(probes, 'GET', '/nope')).toMatchObject({ status: 404, body: { detail: 'No route for GET /nope' } });
    expect(await call(probes, 'POST', '/readyz')).toMatchObject({ status: 405, body: { detail: 'Method POST not allowed on /readyz' } });
  });

  /** worker_listen_connected by channel, as the worker's /metrics shows it. */
  const listening = async (): Promise<Record<string, number>> => {
    const { text } = await call(probes, 'GET', '/metrics');
    return Object.fromEntries(
      [...text.matchAll(/^worker_listen_connected\{channel="([a-z_]+)"\} (\d)$/gm)].map(([, channel, value]) => [channel, Number(value)]),
    );
  };

  it('shows on /metrics that both engines LISTEN for new work', async () => {
    expect(await listening()).toEqual({ queue_jobs_ready: 1, schedule_fires_ready: 1 });
  });

  it('stops being ready, but stays live, when the database becomes unreachable; /metrics shows both engines polling', async () => {
    await proxy.cut();
    const readiness = await call(probes, 'GET', '/readyz');
    expect(readiness.status).toBe(503);
    expect(readiness.body).toEqual({ detail: 'Not ready: the database is unreachable' });
    expect((await call(probes, 'GET', '/livez')).status).toBe(200);
    await expect.poll(listening, { timeout: 10_000 }).toEqual({ queue_jobs_ready: 0, schedule_fires_ready: 0 });
  });

  it('answers /readyz 503 from the moment shutdown begins, drains, exits 0 on SIGTERM and closes the port', async () => {
    // The database comes back (same address), and the worker is ready again: the port answers.
    await proxy.listen(proxyPort);
    await expect.poll(async () => (await call(probes, 'GET', '/readyz')).status, { timeout: 15_000 }).toBe(200);
    // Each engine reconnects its LISTEN connection on its own backoff.
    await expect.poll(listening, { timeout: 35_000 }).toEqual({ queue_jobs_ready: 1, schedule_fires_ready: 1 });
    // A running job keeps the shutdown going (the drain) long enough to probe it.
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    const posted = await call(api.url, 'POST', '/agents/sleep-agent/runs', { token: ROOT_KEY, json: { message: '30', background: true } });
    expect(posted.status, posted.text).toBe(202);
    const jobStatus = async () =>
      (await query<{ status: string }>(databaseUrl, 'SELECT status FROM queue_jobs WHERE id = $1', [posted.body.run_id]))[0].status;
    await expect.poll(jobStatus, { timeout: 15_000 }).toBe('running');

    const stopped = worker.stop('SIGTERM');
    // Not ready as soon as the signal is handled, while the job is still draining (4 s) and the process runs.
    await expect
      .poll(async () => (await call(probes, 'GET', '/readyz')).body, { timeout: 2000, interval: 50 })
      .toEqual({ detail: 'Not ready: shutting down' });
    expect(await jobStatus()).toBe('running');
    expect((await call(probes, 'GET', '/livez')).status).toBe(200);
    // A clean exit (0), not a crash; the job it could not finish is released back to the queue.
    expect(await stopped).toBe(0);
    expect(await jobStatus()).toBe('queued');
    const refused = await fetch(`${probes}/livez`).then(
      () => null,
      (error: Error & { cause?: { code?: string } }) => error.cause?.code,
    );
    expect(refused).toBe('ECONNREFUSED');
  }, 90_000);
});

describe('worker health port configuration', () => {
  it('a taken port ends the boot before anything is claimed: queued runs stay queued, no attempt spent', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    const taken = createServer();
    try {
      for (let i = 0; i < 3; i += 1) {
        const posted = await call(api.url, 'POST', '/agents/echo-agent/runs', {
          token: ROOT_KEY,
          json: { message: 'hi', background: true },
        });
        expect(posted.status, posted.text).toBe(202);
      }
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const worker = spawnNode('dist/apps/worker/src/main.js', {
        DATABASE_URL: databaseUrl,
        DEMO_COMPONENTS: 'true',
        HOST: '127.0.0.1',
        WORKER_HEALTH_PORT: String((taken.address() as AddressInfo).port),
      });
      expect(await worker.exited).toBe(1);
      expect(worker.output()).toContain(
        'is already in use by another process. Stop that process, or set WORKER_HEALTH_PORT to a free port.',
      );
      const jobs = await query<{ status: string; attempt: number; locked_by: string | null }>(
        databaseUrl,
        'SELECT status, attempt, locked_by FROM queue_jobs',
      );
      expect(jobs).toEqual(Array(3).fill({ status: 'queued', attempt: 0, locked_by: null }));
    } finally {
      taken.close();
      await api.stop();
    }
  }, 90_000);

  it('refuses to boot with a port that is not a number, naming the variable', async () => {
    const worker = spawnNode('dist/apps/worker/src/main.js', {
      DATABASE_URL: 'postgresql://127.0.0.1:1/none',
      WORKER_HEALTH_PORT: 'eighty',
    });
    expect(await worker.exited).toBe(1);
    expect(bootFailureOf(worker.output())).toContain('WORKER_HEALTH_PORT="eighty": must be a whole number from 1 to 65535');
  });
});

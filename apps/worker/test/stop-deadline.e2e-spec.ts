import { spawn } from 'node:child_process';

import { afterAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { ApiResponse, call } from '../../../test/support/http';
import { testPort } from '../../../test/support/ports';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startProxiedWorker, startWorker, waitFor } from '../../../test/support/processes';
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

describe('a worker whose output nobody reads', () => {
  it('still ends by its deadline when told to stop, though its last log lines cannot be written', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    const healthPort = await testPort();
    // Its stdout is a pipe this test never reads: once the pipe's buffer is full, no line gets out.
    const worker = spawn(process.execPath, ['dist/apps/worker/src/main.js'], {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: databaseUrl,
        DEMO_COMPONENTS: 'true',
        LOG_LEVEL: 'debug',
        HOST: '127.0.0.1',
        WORKER_HEALTH_PORT: String(healthPort),
        WORKER_SHUTDOWN_TIMEOUT_SECONDS: '1',
      },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const ended = new Promise<string>((resolve) => worker.once('exit', (code, signal) => resolve(`${code ?? signal}`)));
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).ok, 60_000, 'the worker to be ready');
      // Two lines a job at debug: far more than a pipe holds.
      const runs = await Promise.all(
        Array.from({ length: 400 }, () =>
          call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'x', background: true } }),
        ),
      );
      expect(runs.every((run) => run.status === 202)).toBe(true);
      await waitFor(
        async () =>
          (await query<{ n: number }>(databaseUrl, `SELECT count(*)::int AS n FROM queue_jobs WHERE status = 'completed'`))[0].n === 400,
        60_000,
        'the runs to complete',
      );
      const stopping = Date.now();
      worker.kill('SIGTERM');
      // 1 s of drain, 5 s to hand back, 2 s to exit, and slack for a busy machine.
      await expect(Promise.race([ended, new Promise((resolve) => setTimeout(() => resolve('still running'), 20_000))])).resolves.not.toBe(
        'still running',
      );
      expect(Date.now() - stopping).toBeLessThan(16_000);
    } finally {
      worker.kill('SIGKILL');
      await api.stop();
    }
  }, 150_000);
});

/** Posts a background sleep-agent run of `seconds`, waits until a worker runs it, and returns how to read it. */
async function sleepRunning(api: RunningApi, seconds: number): Promise<() => Promise<ApiResponse>> {
  const run = await call(api.url, 'POST', '/agents/sleep-agent/runs', {
    token: ROOT_KEY,
    json: { message: String(seconds), background: true },
  });
  const read = () => call(api.url, 'GET', `/agents/sleep-agent/runs/${run.body.run_id}`, { token: ROOT_KEY });
  await expect.poll(async () => (await read()).body.status, { timeout: 15_000 }).toBe('running');
  return read;
}

describe('a worker told to stop while its database is briefly away', () => {
  it('keeps the outcome of a run that finished meanwhile, and writes it once the database is back, within its drain', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    const { worker, proxy, proxyPort } = await startProxiedWorker(databaseUrl, {
      DEMO_COMPONENTS: 'true',
      // The database is back 3 s into the drain: 7 s left for its writes on a loaded machine.
      WORKER_SHUTDOWN_TIMEOUT_SECONDS: '10',
      QUEUE_POLL_INTERVAL_MS: '300',
    });
    try {
      const read = await sleepRunning(api, 2);

      // The database goes away, the worker is told to stop, the run finishes its 2 s, and the database comes back.
      await proxy.cut();
      worker.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await proxy.listen(proxyPort);

      expect(await worker.exited).toBe(0);
      expect((await read()).body).toMatchObject({ status: 'completed', content: 'Slept 2 s' });
      expect(worker.output()).not.toMatch(/recording outcomes failed|job outcome\(s\) given up/);
    } finally {
      await worker.stop('SIGKILL');
      await proxy.cut();
      await api.stop();
    }
  }, 90_000);
});

describe('a worker told to stop while its database stays away past the drain', () => {
  it('gives the outcome up at its deadline, says so, and the run is failed as lost by another worker, not left running', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    const grace = { QUEUE_LOCK_GRACE_SECONDS: '2' };
    const { worker, proxy } = await startProxiedWorker(databaseUrl, {
      DEMO_COMPONENTS: 'true',
      WORKER_SHUTDOWN_TIMEOUT_SECONDS: '5',
      QUEUE_POLL_INTERVAL_MS: '300',
      ...grace,
    });
    let other: RunningProcess | undefined;
    try {
      const read = await sleepRunning(api, 1);

      // The run finishes its 1 s inside the 5 s drain, but its outcome can never be written.
      await proxy.cut();
      worker.child.kill('SIGTERM');
      // The stop itself went as designed (exit 0); the outcome's loss is the error line's to tell.
      expect(await worker.exited).toBe(0);
      expect(worker.output()).toContain("database still unreachable at the drain's deadline: 1 job outcome(s) given up");

      // Another worker's sweep settles it once the lock's grace has passed: failed as lost, not left running.
      other = await startWorker({ DATABASE_URL: databaseUrl, DEMO_COMPONENTS: 'true', DB_MIGRATE: 'false', ...grace });
      await expect.poll(async () => (await read()).body.status, { timeout: 20_000 }).toBe('failed');
      expect((await read()).body.error).toMatch(/lost the job: no heartbeat/);
    } finally {
      await other?.stop('SIGKILL');
      await worker.stop('SIGKILL');
      await proxy.cut();
      await api.stop();
    }
  }, 90_000);
});

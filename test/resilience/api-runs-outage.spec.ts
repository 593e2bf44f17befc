import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../support/database';
import { call } from '../support/http';
import { OwnPostgres } from '../support/own-postgres';
import { ROOT_KEY } from '../support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../support/processes';
import { TcpProxy } from '../support/tcp-proxy';

/** Runs the api executes itself (synchronous, stream=true) while PostgreSQL goes away: killed with SIGKILL, started again. */
describe('runs the api executes itself, through a database outage', () => {
  const database = new OwnPostgres();
  let url: string;
  const started: RunningProcess[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    await database.start();
    url = database.url;
    // The worker sweeps runs whose api stopped renewing them: it must not take an outage for that.
    env = { DATABASE_URL: url, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', QUEUE_LOCK_GRACE_SECONDS: '10' };
    started.push(await startWorker(env));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(started.map((process) => process.stop('SIGKILL')));
    await database.remove();
  });

  function startRuns(api: RunningApi, seconds: number) {
    const sync = call(api.url, 'POST', '/agents/sleep-agent/runs', { token: ROOT_KEY, json: { message: String(seconds) } });
    const streamed = fetch(`${api.url}/agents/sleep-agent/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: String(seconds), stream: true }),
    }).then((response) => response.text());
    return { sync, streamed };
  }

  const running = () => query<{ id: string }>(url, `SELECT id FROM runs WHERE status = 'running'`);

  it('stores the outcome of a run that ended while the database was away once it is back, and answers its caller with it', async () => {
    const api = await startApi(env);
    started.push(api);
    const { sync, streamed } = startRuns(api, 3);
    await waitFor(async () => (await running()).length === 2, 15_000, 'both runs to be running');

    await database.crash();
    // The runs end (3 s) while the database is still away.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    await database.start();

    const answered = await sync;
    expect(answered.status, answered.text).toBe(200);
    expect(answered.body).toMatchObject({ status: 'completed', content: 'Slept 3 s' });
    const events = await streamed;
    expect(events).toMatch(/event: RunCompleted\ndata: \{[^\n]*"content":"Slept 3 s"/);
    expect(events).not.toMatch(/event: RunError/);
    const stored = await query<{ status: string; content: string }>(url, `SELECT status, content FROM runs ORDER BY created_at`);
    expect(stored).toEqual([
      { status: 'completed', content: 'Slept 3 s' },
      { status: 'completed', content: 'Slept 3 s' },
    ]);
    expect(await query(url, 'SELECT run_id FROM run_leases')).toEqual([]);
    await api.stop();
  }, 90_000);

  it('told to stop while the database is away, cancels its runs in-process after API_SHUTDOWN_TIMEOUT_SECONDS and exits in time', async () => {
    const api = await startApi({ ...env, API_SHUTDOWN_TIMEOUT_SECONDS: '2', LOG_LEVEL: 'info' });
    started.push(api);
    const { sync, streamed } = startRuns(api, 60);
    await waitFor(async () => (await running()).length >= 2, 15_000, 'both runs to be running');

    await database.crash();
    const stopping = Date.now();
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    // 2 s to finish, then the cancel, without the database: inside docker's 10 s stop.
    expect(Date.now() - stopping).toBeLessThan(10_000);
    expect(api.output()).toContain('cancelling 2 run(s) still running after API_SHUTDOWN_TIMEOUT_SECONDS');

    // The outcome (cancelled) could not be stored: the callers are told the database is away, in the error body's words.
    const answered = await sync;
    expect(answered.status, answered.text).toBe(503);
    expect(answered.body).toEqual({ detail: 'Database unavailable; try again shortly' });
    expect(await streamed).toMatch(/event: RunError\ndata: \{"error":"Database unavailable; try again shortly"\}/);
  }, 90_000);

  it('told to stop while the database hangs (no answer, no error), still cancels its runs and exits in time', async () => {
    const target = new URL(await createTestDatabase());
    const proxy = new TcpProxy(target.hostname, Number(target.port));
    target.port = String(await proxy.listen());
    const api = await startApi({ ...env, DATABASE_URL: target.toString(), API_SHUTDOWN_TIMEOUT_SECONDS: '2' });
    started.push(api);
    const { sync } = startRuns(api, 60);
    await new Promise((resolve) => setTimeout(resolve, 1500));

    // A checkpoint now waits for a connection that never answers: the stop must not wait with it.
    proxy.stall(true);
    const stopping = Date.now();
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    // 2 s, then the cancel at once; the outcome's write waits for a connection at most the pool's 5 s. (It waited for the 60 s run.)
    expect(Date.now() - stopping).toBeLessThan(20_000);
    expect((await sync).status).toBe(503);
  }, 90_000);
});

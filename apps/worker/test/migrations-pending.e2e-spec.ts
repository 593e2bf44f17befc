import { execFileSync } from 'node:child_process';

import { afterAll, describe, expect, it } from 'vitest';

import { createEmptyDatabase, createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, spawnNode, startApi, waitFor } from '../../../test/support/processes';

/**
 * A rolling update starts the new build's workers while its migrate Job may still run (DB_MIGRATE=false):
 * such a worker is not ready, and until it is it must claim no job and fire no schedule.
 */
describe('a worker started before its migrations are applied (DB_MIGRATE=false)', () => {
  let api: RunningApi | undefined;
  let worker: RunningProcess | undefined;
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  it('claims no job and fires no schedule until the migrate role has run, then does both', async () => {
    const databaseUrl = await createTestDatabase();
    // The newest migration not yet recorded: what a new build sees while its migrate Job runs.
    const [newest] = await query<{ timestamp: string; name: string }>(
      databaseUrl,
      'DELETE FROM migrations WHERE id = (SELECT max(id) FROM migrations) RETURNING timestamp, name',
    );
    const server = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', DB_MIGRATE: 'false' });
    api = server;
    worker = spawnNode('dist/apps/worker/src/main.js', {
      LOG_LEVEL: 'info',
      DATABASE_URL: databaseUrl,
      DB_MIGRATE: 'false',
      DEMO_COMPONENTS: 'true',
      PUBLIC_URL: server.url,
      SCHEDULE_TICK_INTERVAL_MS: '200',
    });
    const running = worker;
    await waitFor(
      async () => running.output().includes('worker ready') && running.output().includes('database migrations are pending'),
      60_000,
      'the worker to boot, waiting for the migrations',
    );

    const run = await call(server.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'wait', background: true } });
    expect(run.status, run.text).toBe(202);
    const schedule = await call(server.url, 'POST', '/schedules', {
      token: ROOT_KEY,
      json: { name: 'while-migrating', cron_expr: '0 0 1 1 *', method: 'GET', endpoint: '/health' },
    });
    expect((await call(server.url, 'POST', `/schedules/${schedule.body.id}/trigger`, { token: ROOT_KEY })).status).toBe(202);
    // A few of the engines' polls and the tick's intervals: nothing is taken.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect((await call(server.url, 'GET', `/queue/jobs/${run.body.run_id}`, { token: ROOT_KEY })).body).toMatchObject({
      status: 'queued',
      attempt: 0,
    });
    const fires = async () => (await call(server.url, 'GET', `/schedules/${schedule.body.id}/runs`, { token: ROOT_KEY })).body.data;
    expect(await fires()).toMatchObject([{ status: 'queued' }]);

    await query(databaseUrl, 'INSERT INTO migrations (timestamp, name) VALUES ($1, $2)', [newest.timestamp, newest.name]);
    await waitFor(
      async () => (await call(server.url, 'GET', `/queue/jobs/${run.body.run_id}`, { token: ROOT_KEY })).body.status === 'completed',
      20_000,
      'the run to complete once migrated',
    );
    await waitFor(async () => (await fires())[0]?.status === 'success', 20_000, 'the fire to run once migrated');
    expect(running.output()).toContain('Database ready: claiming jobs and firing schedules');
  });

  it('on a first deploy (no table yet) logs that it waits, and no housekeeping error with a stack', async () => {
    const databaseUrl = await createEmptyDatabase();
    const fresh = spawnNode('dist/apps/worker/src/main.js', { LOG_LEVEL: 'info', DATABASE_URL: databaseUrl, DB_MIGRATE: 'false' });
    try {
      await waitFor(
        async () => fresh.output().includes('worker ready') && fresh.output().includes('database migrations are pending'),
        60_000,
        'the worker to boot, waiting for the migrations',
      );
      execFileSync('npm', ['run', '--silent', 'migrate'], {
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
        stdio: 'pipe',
      });
      await waitFor(async () => fresh.output().includes('Database ready'), 20_000, 'the worker to see the migrations');
      // Trace retention waits for the tables as the queue does (it ran at once and failed on "runs" before).
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(fresh.output()).not.toContain('"level":50');
      expect(fresh.output()).not.toContain('does not exist');
    } finally {
      await fresh.stop();
    }
  });
});

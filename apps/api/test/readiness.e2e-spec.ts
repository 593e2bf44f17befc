import { execFileSync } from 'node:child_process';

import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEmptyDatabase, createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { RunningApi, spawnNode, startApi, waitFor } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

describe('GET /readyz', () => {
  describe('on a migrated database', () => {
    let api: RunningApi;
    let proxy: TcpProxy;

    beforeAll(async () => {
      const url = new URL(await createTestDatabase());
      proxy = new TcpProxy(url.hostname, Number(url.port));
      url.port = String(await proxy.listen());
      api = await startApi({ DATABASE_URL: url.toString(), DB_MIGRATE: 'false' });
    });
    afterAll(async () => {
      await api?.stop();
      await proxy?.cut();
    });

    it('is 200 without credentials while the database answers', async () => {
      expect(await call(api.url, 'GET', '/readyz')).toMatchObject({ status: 200, body: { status: 'ok', checks: { database: 'ok' } } });
    });

    it('is 503 with the standard error body once the database is unreachable; /health stays 200', async () => {
      await proxy.cut();
      const readiness = await call(api.url, 'GET', '/readyz');
      expect(readiness.status).toBe(503);
      expect(readiness.body).toEqual({ detail: 'Not ready: the database is unreachable' });
      expect((await call(api.url, 'GET', '/health')).status).toBe(200);
    });
  });

  describe("while every connection of the app's pool waits on a lock (load, not an outage)", () => {
    let api: RunningApi;
    let databaseUrl: string;

    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
      api = await startApi({ DATABASE_URL: databaseUrl, DEMO_COMPONENTS: 'true', DATABASE_POOL_SIZE: '5' });
    });
    afterAll(() => api?.stop());

    const waitingOnLock = async () =>
      (
        await query<{ n: number }>(
          databaseUrl,
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
      )[0].n;

    it('stays 200: readiness asks over a connection of its own, so a busy pool does not take every replica out at once', async () => {
      const locker = new Client({ connectionString: databaseUrl });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE runs IN ACCESS EXCLUSIVE MODE');
        // More waiting requests than the pool has connections (synchronous runs: each holds one while it waits,
        // where background runs share the few their grouped writes take).
        const posts = Array.from({ length: 30 }, () => call(api.url, 'POST', '/agents/echo-agent/runs', { json: { message: 'blocked' } }));
        // Every connection of the pool, and no more: DATABASE_POOL_SIZE bounds it.
        await waitFor(async () => (await waitingOnLock()) === 5, 5_000, 'the pool to fill');
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(await waitingOnLock()).toBe(5);
        expect(await call(api.url, 'GET', '/readyz')).toMatchObject({ status: 200, body: { checks: { database: 'ok' } } });
        await locker.query('ROLLBACK');
        const answered = await Promise.all(posts);
        expect(answered.every((response) => [200, 503].includes(response.status))).toBe(true);
      } finally {
        await locker.end();
      }
    });
    it('answers 503 to a background POST that waited 5 s behind statements stuck on a lock, as to a query that waited for a connection', async () => {
      const post = () => call(api.url, 'POST', '/agents/echo-agent/runs', { json: { message: 'blocked', background: true } });
      const locker = new Client({ connectionString: databaseUrl });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE runs IN ACCESS EXCLUSIVE MODE');
        // Background runs are written two statements at a time: these two go out and wait on the lock.
        const stuck = [post()];
        await waitFor(async () => (await waitingOnLock()) === 1, 5_000, 'the first statement to wait');
        stuck.push(post());
        await waitFor(async () => (await waitingOnLock()) === 2, 5_000, 'the second statement to wait');

        const started = Date.now();
        const waited = await Promise.all(Array.from({ length: 3 }, post));

        expect(waited.map(({ status, body }) => ({ status, body }))).toEqual(
          Array(3).fill({ status: 503, body: { detail: 'Database unavailable; try again shortly' } }),
        );
        expect(Date.now() - started).toBeGreaterThanOrEqual(4_900);
        await locker.query('ROLLBACK');
        expect((await Promise.all(stuck)).map(({ status }) => status)).toEqual([202, 202]);
      } finally {
        await locker.end();
      }
    });
  });

  describe('before migrations have run (DB_MIGRATE=false, migrate job still pending)', () => {
    let api: RunningApi;
    let databaseUrl: string;

    beforeAll(async () => {
      databaseUrl = await createEmptyDatabase();
      api = await startApi({ DATABASE_URL: databaseUrl, DB_MIGRATE: 'false', LOG_LEVEL: 'info' });
    });
    afterAll(() => api?.stop());

    it('is 503 until `npm run migrate` has applied every migration, then 200; the log says why, once per change', async () => {
      const before = await call(api.url, 'GET', '/readyz');
      expect(before.status).toBe(503);
      expect(before.body).toEqual({
        detail: 'Not ready: database migrations are pending (run npm run migrate: the migrate role in the image)',
      });
      await call(api.url, 'GET', '/readyz');
      await call(api.url, 'GET', '/readyz');
      // A scrape meanwhile answers this process's own figures, without the database's (not a 500).
      const early = await call(api.url, 'GET', '/metrics');
      expect(early.status, early.text).toBe(200);
      expect(early.text).toMatch(/^process_cpu_user_seconds_total /m);
      expect(early.text).not.toMatch(/^queue_jobs\{/m);
      await call(api.url, 'GET', '/metrics');
      // A request that reaches it meanwhile is a 503 that passes, saying why, not a 500.
      const sessions = await call(api.url, 'GET', '/sessions');
      expect(sessions.status, sessions.text).toBe(503);
      expect(sessions.body).toEqual({
        detail: "Database not ready: its schema does not match this build's (migrations pending); try again shortly",
      });

      execFileSync('npm', ['run', '--silent', 'migrate'], {
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
        stdio: 'pipe',
      });
      expect((await call(api.url, 'GET', '/readyz')).status).toBe(200);
      expect((await call(api.url, 'GET', '/metrics')).text).toMatch(/^queue_jobs\{/m);
      // The reason is in the log (a probe's body reaches no kubelet event), once for three probes, not as an error per probe.
      // Polled: the api's log reaches the test after its answers.
      await expect.poll(() => api.output()).toContain('api ready again');
      await expect.poll(() => api.output()).toContain('metrics scraped with the queue and schedule figures again');
      const lines = api.output().split('\n');
      expect(
        lines.filter((line) =>
          line.includes('api not ready: database migrations are pending (run npm run migrate: the migrate role in the image)'),
        ),
      ).toHaveLength(1);
      // So is the scrapes' (Prometheus scrapes every 15 s or so): once for two, and once when the figures are back.
      expect(lines.filter((line) => line.includes('metrics scraped without the queue and schedule figures'))).toHaveLength(1);
      expect(lines.filter((line) => line.includes('/readyz 503'))).toEqual([]);
    });
  });
});

/** The message of a process's one log line, checked to be JSON at that level (30 info, 60 fatal). */
function said(output: string, level: number): string {
  const lines = output.trim().split('\n');
  expect(lines, output).toHaveLength(1);
  const line = JSON.parse(lines[0]) as { level: number; service: string; msg: string };
  expect(line).toMatchObject({ level, service: 'migrate' });
  return line.msg;
}

describe('migrations under the advisory lock', () => {
  it('several processes migrating one empty database at once all succeed, and each migration is applied once', async () => {
    const databaseUrl = await createEmptyDatabase();
    const migrators = Array.from({ length: 4 }, () => spawnNode('dist/libs/database/src/migrate.main.js', { DATABASE_URL: databaseUrl }));
    const codes = await Promise.all(migrators.map((migrator) => migrator.exited));
    expect(codes, migrators.map((migrator) => migrator.output()).join('\n')).toEqual([0, 0, 0, 0]);
    // One took the lock first and applied everything; the others waited for it and found nothing pending. Each
    // says so in one JSON line at info level, as every role logs off a terminal.
    const outputs = migrators.map((migrator) => said(migrator.output(), 30));
    const appliers = outputs.filter((output) => output.startsWith('Applied migrations: '));
    expect(appliers).toHaveLength(1);
    expect(outputs.filter((output) => output === 'No pending migrations')).toHaveLength(3);
    const applied = appliers[0].slice('Applied migrations: '.length).split(', ');
    const rows = await query<{ name: string; n: number }>(
      databaseUrl,
      'SELECT name, count(*)::int AS n FROM migrations GROUP BY name ORDER BY name',
    );
    expect(rows.map((row) => row.name).sort()).toEqual([...applied].sort());
    expect(rows.every((row) => row.n === 1)).toBe(true);
    // The schema they built is whole: a later run finds nothing to do.
    const again = spawnNode('dist/libs/database/src/migrate.main.js', { DATABASE_URL: databaseUrl });
    expect(await again.exited).toBe(0);
    expect(said(again.output(), 30)).toBe('No pending migrations');
  }, 60_000);

  it('a failure is one fatal JSON line saying nothing was applied, and why', async () => {
    const missing = (await createEmptyDatabase()).replace(/\/[^/?]+(\?|$)/, '/no_such_database$1');
    const migrator = spawnNode('dist/libs/database/src/migrate.main.js', { DATABASE_URL: missing });
    expect(await migrator.exited).toBe(1);
    expect(said(migrator.output(), 60)).toMatch(
      /^Migrations not applied: the database DATABASE_URL names \(127\.0\.0\.1:\d+\/no_such_database\) refused the connection: database "no_such_database" does not exist\. Check DATABASE_URL /,
    );
  });
});

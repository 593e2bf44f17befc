import { execFileSync } from 'node:child_process';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createEmptyDatabase, createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { RunningApi, startApi } from '../../../test/support/processes';
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

  describe('before migrations have run (DB_MIGRATE=false, migrate job still pending)', () => {
    let api: RunningApi;
    let databaseUrl: string;

    beforeAll(async () => {
      databaseUrl = await createEmptyDatabase();
      api = await startApi({ DATABASE_URL: databaseUrl, DB_MIGRATE: 'false' });
    });
    afterAll(() => api?.stop());

    it('is 503 until `npm run migrate` has applied every migration, then 200', async () => {
      const before = await call(api.url, 'GET', '/readyz');
      expect(before.status).toBe(503);
      expect(before.body).toEqual({ detail: 'Not ready: database migrations are pending (run the migrate role)' });

      execFileSync('npm', ['run', '--silent', 'migrate'], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl }, stdio: 'pipe' });
      expect((await call(api.url, 'GET', '/readyz')).status).toBe(200);
    });
  });
});

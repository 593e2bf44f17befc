import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

import { startEmbeddedPostgres } from '../../scripts/embedded-postgres.mjs';
import { testPort } from '../support/ports';

/** What the operator exported to `npm start`: the api's and the deployment's secrets. */
const EXPORTED = {
  OS_SECURITY_KEY: 'exported-security-key-0123456789abcdef',
  JWT_SECRET: 'exported-jwt-secret-0123456789abcdef',
  INTERNAL_SERVICE_TOKEN: 'exported-internal-token-0123456789abcdef',
  OPENAI_API_KEY: 'sk-exported-provider-key-0123456789',
};

describe('the embedded PostgreSQL runs without the secrets of the environment that started it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pg-env-'));
  let stop: (() => Promise<void>) | undefined;
  afterAll(async () => {
    await stop?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it("holds none of them in its environment, which its own user (another uid, shared by every embedded cluster) and its superuser's COPY FROM PROGRAM can read", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, EXPORTED);
    let pid: number | undefined;
    let url: string | undefined;
    try {
      const db = await startEmbeddedPostgres({ databaseDir: join(dir, 'pg'), port: await testPort(), persistent: false });
      stop = db.stop;
      pid = db.pid();
      url = db.url();
    } finally {
      for (const name of Object.keys(EXPORTED)) {
        if (saved[name] === undefined) {
          delete process.env[name];
        } else {
          process.env[name] = saved[name];
        }
      }
    }
    expect(pid).toBeDefined();
    const environment = readFileSync(`/proc/${pid}/environ`, 'utf8');
    expect(environment).toContain('LC_MESSAGES=C');
    for (const secret of Object.values(EXPORTED)) {
      expect(environment).not.toContain(secret);
    }
    // Nothing it needs is lost on the way: it answers.
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end();
    }
  }, 120_000);
});

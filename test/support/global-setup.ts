import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { TestProject } from 'vitest/node';

import { startEmbeddedPostgres } from '../../scripts/embedded-postgres.mjs';
import { TEMPLATE_DATABASE } from './database';
import { testPort } from './ports';

/**
 * One temporary directory for the whole run, removed at its end: TMPDIR names it for the test files and
 * every process they start, so the hundreds of homes, projects and configs the tests make do not pile up
 * in the machine's /tmp run after run.
 */
function runTemporaryDirectory(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'platform-tests-'));
  process.env.TMPDIR = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}

/**
 * One PostgreSQL for the whole run (embedded unless DATABASE_URL is set), and a
 * template database with every migration applied once; each test file clones it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const removeTemporaryDirectory = runTemporaryDirectory();
  let adminUrl = process.env.DATABASE_URL;
  let stop = async (): Promise<void> => removeTemporaryDirectory();
  if (!adminUrl) {
    const databaseDir = mkdtempSync(join(tmpdir(), 'platform-test-pg-'));
    const db = await startEmbeddedPostgres({ databaseDir, port: await testPort(), persistent: false });
    adminUrl = db.url();
    stop = async () => {
      await db.stop();
      removeTemporaryDirectory();
    };
  }
  const { Client } = await import('pg');
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`);
  await client.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  await client.end();
  execFileSync(process.execPath, ['dist/libs/database/src/migrate.main.js'], {
    env: { ...process.env, DATABASE_URL: withDatabase(adminUrl, TEMPLATE_DATABASE) },
    stdio: 'inherit',
  });
  project.provide('adminDatabaseUrl', adminUrl);
  return stop;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
  }
}

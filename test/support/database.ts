import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

import { Client } from 'pg';
import { inject } from 'vitest';

export const TEMPLATE_DATABASE = 'platform_test_template';

export function databaseUrl(database: string): string {
  const parsed = new URL(inject('adminDatabaseUrl'));
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** A fresh database cloned from the migrated template: each test file gets its own. */
export async function createTestDatabase(): Promise<string> {
  return createDatabase(`TEMPLATE ${TEMPLATE_DATABASE}`);
}

/** A fresh database with no tables: for what happens before migrations have run. */
export async function createEmptyDatabase(): Promise<string> {
  return createDatabase('');
}

async function createDatabase(options: string): Promise<string> {
  const name = `test_${randomBytes(6).toString('hex')}`;
  const client = new Client({ connectionString: inject('adminDatabaseUrl') });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name} ${options}`);
  } finally {
    await client.end();
  }
  return databaseUrl(name);
}

/** Runs one query against a test database (for asserting what was stored). */
export async function query<T extends Record<string, unknown>>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Takes a database's migrations back down to the one before `migration`, as a database of that release has it (runs the built code). */
export function undoMigrationsTo(url: string, migration: string): void {
  const script = `
const { DataSource } = require('typeorm');
const { dataSourceOptions } = require('./dist/libs/database/src/index.js');
(async () => {
  const ds = await new DataSource(dataSourceOptions(process.env.DATABASE_URL)).initialize();
  const applied = async () => (await ds.query('SELECT name FROM migrations')).map((row) => row.name);
  while ((await applied()).includes(${JSON.stringify(migration)})) {
    await ds.undoLastMigration({ transaction: 'each' });
  }
  await ds.destroy();
})().catch((error) => { console.error(error); process.exit(1); });
`;
  execFileSync(process.execPath, ['-e', script], { env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8' });
}

/** Applies every pending migration (runs the built code). */
export function migrate(url: string): void {
  execFileSync(process.execPath, ['dist/libs/database/src/migrate.main.js'], {
    env: { ...process.env, DATABASE_URL: url },
    encoding: 'utf8',
  });
}

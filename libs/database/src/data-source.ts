import { setTimeout as sleep } from 'node:timers/promises';

import { DataSource, DataSourceOptions } from 'typeorm';

import { ConnectionClient } from './connection-client';
import { MIGRATIONS } from './migrations';

export function dataSourceOptions(url: string, entities: DataSourceOptions['entities'] = []): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
    // Fail fast when the database is gone instead of queueing requests forever.
    extra: { max: 20, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30000, Client: ConnectionClient },
  };
}

// Any 64-bit constant works; this one spells "svcmigr" so it is recognisable in pg_locks.
const MIGRATION_LOCK_KEY = '0x7376636d696772';

/** How often a process waiting for another's migrations tries the lock again. */
const MIGRATION_LOCK_RETRY_MS = 250;

/**
 * Applies pending migrations while holding a session-level advisory lock, so any number
 * of api and worker replicas can boot at once and exactly one of them migrates. The others
 * try the lock again and again rather than wait on it: a waiting statement is an open
 * transaction, which an index built CONCURRENTLY would wait for while they wait for it.
 */
export async function migrate(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    while (!(await runner.query(`SELECT pg_try_advisory_lock(${MIGRATION_LOCK_KEY}) AS taken`))[0].taken) {
      await sleep(MIGRATION_LOCK_RETRY_MS);
    }
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((migration) => migration.name);
  } finally {
    await runner.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`).catch(() => undefined);
    await runner.release();
  }
}

import { setTimeout as sleep } from 'node:timers/promises';

import { Logger } from '@nestjs/common';
import { DataSource, DataSourceOptions, MigrationExecutor } from 'typeorm';

import { ConnectionClient } from './connection-client';
import { MIGRATIONS } from './migrations';

/** What the pool holds when no DATABASE_POOL_SIZE is given (the migrate role, tests). */
const DEFAULT_POOL_SIZE = 20;

/** How long a query waits for a connection of the pool before it fails (the api then answers 503). */
export const CONNECTION_WAIT_MS = 5000;

export function dataSourceOptions(url: string, poolSize = DEFAULT_POOL_SIZE): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
    // Fail fast when the database is gone instead of queueing requests forever.
    extra: { max: poolSize, connectionTimeoutMillis: CONNECTION_WAIT_MS, idleTimeoutMillis: 30000, Client: ConnectionClient },
  };
}

// Any 64-bit constant works; this one spells "svcmigr" so it is recognisable in pg_locks.
const MIGRATION_LOCK_KEY = '0x7376636d696772';

/** How often a process waiting for another's migrations tries the lock again. */
const MIGRATION_LOCK_RETRY_MS = 250;

/**
 * How long one statement of a migration waits for a table lock. A schema change queued behind a long
 * transaction would otherwise hold up every later query on that table (theirs queue behind it) for as long
 * as that transaction lasts; it gives up instead, its migration rolls back, and it is tried again.
 * A migration that builds an index CONCURRENTLY (outside a transaction) must `SET lock_timeout = 0` first: its
 * waits for older transactions are lock waits too, and one cut short leaves an invalid index behind.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 5000;
/** How many times a migration that could not get its locks is tried before the process gives up. */
const MIGRATION_ATTEMPTS = 12;
const LOCK_NOT_AVAILABLE = '55P03';

const logger = new Logger('Migrations');

function lockNotAvailable(error: unknown): boolean {
  const { code, driverError } = error as { code?: string; driverError?: { code?: string } };
  return (driverError?.code ?? code) === LOCK_NOT_AVAILABLE;
}

/**
 * Applies pending migrations while holding a session-level advisory lock, so any number
 * of api and worker replicas can boot at once and exactly one of them migrates. The others
 * try the lock again and again rather than wait on it: a waiting statement is an open
 * transaction, which an index built CONCURRENTLY would wait for while they wait for it.
 * Each migration is its own transaction, and waits MIGRATION_LOCK_TIMEOUT_MS at most for a lock.
 */
export async function migrate(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    while (!(await runner.query(`SELECT pg_try_advisory_lock(${MIGRATION_LOCK_KEY}) AS taken`))[0].taken) {
      await sleep(MIGRATION_LOCK_RETRY_MS);
    }
    await runner.query(`SET lock_timeout = ${MIGRATION_LOCK_TIMEOUT_MS}`);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'each';
    // Under the advisory lock nobody else migrates: what is pending now is what this process applies.
    const pending = (await executor.getPendingMigrations()).map((migration) => migration.name);
    for (let attempt = 1; ; attempt += 1) {
      try {
        await executor.executePendingMigrations();
        return pending;
      } catch (error) {
        if (!lockNotAvailable(error) || attempt === MIGRATION_ATTEMPTS) {
          throw error;
        }
        // What ran before it stays applied (a transaction each); the one that waited starts over.
        logger.warn(
          `A migration waited over ${MIGRATION_LOCK_TIMEOUT_MS} ms for a table lock another transaction holds; ` +
            `trying again (attempt ${attempt + 1} of ${MIGRATION_ATTEMPTS})`,
        );
        await sleep(MIGRATION_LOCK_RETRY_MS * 4 * attempt);
      }
    }
  } finally {
    // The connection goes back to the app's pool: its queries keep the server's lock_timeout.
    await runner.query('RESET lock_timeout').catch(() => undefined);
    await runner.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`).catch(() => undefined);
    await runner.release();
  }
}

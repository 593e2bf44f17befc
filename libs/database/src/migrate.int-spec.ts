import { Client } from 'pg';
import { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { dataSourceOptions, migrate, MIGRATION_LOCK_TIMEOUT_MS } from './data-source';
import { MIGRATIONS } from './migrations';

/** A release's next schema change on a hot table: it needs the table to itself. */
class AddColumnToRuns1799999999999 implements MigrationInterface {
  name = 'AddColumnToRuns1799999999999';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE runs ADD COLUMN lock_probe integer');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE runs DROP COLUMN lock_probe');
  }
}

describe('a migration behind a long transaction', () => {
  let url: string;
  let dataSource: DataSource;

  beforeAll(async () => {
    url = await createTestDatabase();
    dataSource = await new DataSource({
      ...dataSourceOptions(url),
      migrations: [...MIGRATIONS, AddColumnToRuns1799999999999],
    }).initialize();
  });
  afterAll(() => dataSource?.destroy());

  it("gives up its lock wait, so the table's other queries are not held behind it, and applies once the transaction ends", async () => {
    const holder = new Client({ connectionString: url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM runs LIMIT 1'); // a long read: ACCESS SHARE on runs until it ends
    const holdMs = MIGRATION_LOCK_TIMEOUT_MS + 3_000;
    const released = new Promise((resolve) => setTimeout(resolve, holdMs)).then(async () => {
      await holder.query('COMMIT');
      return Date.now();
    });
    try {
      const migrated = migrate(dataSource);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      // Queued behind the ALTER's exclusive lock request for as long as that request waits.
      const reader = new Client({ connectionString: url });
      await reader.connect();
      const read = reader.query('SELECT count(*) FROM runs').then(() => Date.now());
      const [readAt, releasedAt] = await Promise.all([read, released]);
      await reader.end();
      expect(readAt).toBeLessThan(releasedAt);
      expect(await migrated).toEqual(['AddColumnToRuns1799999999999']);
    } finally {
      await released;
      await holder.end();
    }
    const columns = await query<{ column_name: string }>(
      url,
      "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs' AND column_name = 'lock_probe'",
    );
    expect(columns).toHaveLength(1);
    // The connection went back to the pool with the server's lock_timeout.
    expect((await dataSource.query('SHOW lock_timeout'))[0].lock_timeout).toBe('0');
  }, 30_000);
});

import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { dataSourceOptions } from './data-source';
import { queryPrepared } from './prepared';

// One connection in the pool, so its backend's pid tells whether the connection was kept.
describe('queryPrepared', () => {
  let dataSource: DataSource;
  const backend = async () =>
    (await queryPrepared<{ pid: number }>(dataSource, { name: 'test_backend', text: 'SELECT pg_backend_pid() AS pid' }, [])).rows[0].pid;

  beforeAll(async () => {
    const options = dataSourceOptions(await createTestDatabase());
    dataSource = await new DataSource({ ...options, extra: { ...options.extra, max: 1 } } as typeof options).initialize();
    await dataSource.query('CREATE TABLE prepared_probe (key varchar(16) PRIMARY KEY)');
  });

  afterAll(async () => {
    await dataSource?.destroy();
  });

  it('keeps the connection when the server refuses the statement (a replayed key), and fails with its error', async () => {
    const insert = { name: 'test_insert_probe', text: 'INSERT INTO prepared_probe (key) VALUES ($1)' };
    await queryPrepared(dataSource, insert, ['replayed']);
    const before = await backend();
    await expect(queryPrepared(dataSource, insert, ['replayed'])).rejects.toMatchObject({ code: '23505' });
    expect(await backend()).toBe(before);
  });

  it('runs a statement whose plan a migration made stale once more, on a fresh connection', async () => {
    const read = { name: 'test_read_probe', text: 'SELECT key FROM prepared_probe ORDER BY key' };
    await queryPrepared(dataSource, read, []);
    const before = await backend();
    await dataSource.query('ALTER TABLE prepared_probe ALTER COLUMN key TYPE varchar(32)');
    expect((await queryPrepared<{ key: string }>(dataSource, read, [])).rows).toEqual([{ key: 'replayed' }]);
    expect(await backend()).not.toBe(before);
  });
});

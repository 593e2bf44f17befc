import { execFileSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { createTestDatabase } from './support/database';

// Runs in a child process on the built code, where TypeORM sees real decorator metadata.
const CHECK = `
const { readdirSync } = require('node:fs');
const { join } = require('node:path');
const { DataSource } = require('typeorm');
const { dataSourceOptions } = require('./dist/libs/database/src/index.js');
const entities = readdirSync('dist/libs').flatMap((lib) => {
  const dir = join('dist/libs', lib, 'src');
  return readdirSync(dir).filter((file) => file.endsWith('.entity.js')).flatMap((file) => Object.values(require('./' + join(dir, file))));
});
(async () => {
  const ds = await new DataSource({ ...dataSourceOptions(process.env.DATABASE_URL), entities }).initialize();
  const sql = await ds.driver.createSchemaBuilder().log();
  console.log(JSON.stringify({ entities: entities.map((e) => e.name), pending: sql.upQueries.map((q) => q.query) }));
  await ds.destroy();
})().catch((error) => { console.error(error); process.exit(1); });
`;

describe('schema drift', () => {
  it('the migrations produce exactly the schema the entities describe', async () => {
    const output = execFileSync(process.execPath, ['-e', CHECK], {
      env: { ...process.env, DATABASE_URL: await createTestDatabase() },
      encoding: 'utf8',
    });
    const { entities, pending } = JSON.parse(output.trim().split('\n').pop()!);
    expect(entities.length).toBeGreaterThan(0);
    expect(pending).toEqual([]);
  });
});

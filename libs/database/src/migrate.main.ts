import { DataSource } from 'typeorm';

import { loadEnv } from '@app/config';

import { dataSourceOptions, migrate } from './data-source';

import 'reflect-metadata';

/** `npm run migrate`: applies pending migrations and exits. */
async function main(): Promise<void> {
  const env = loadEnv();
  const dataSource = await new DataSource(dataSourceOptions(env.databaseUrl)).initialize();
  try {
    const applied = await migrate(dataSource);
    console.log(applied.length > 0 ? `Applied migrations: ${applied.join(', ')}` : 'No pending migrations');
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

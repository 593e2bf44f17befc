// First: on a Node.js the service does not support, say so before a dependency fails to load.
import '@app/supported-node';
import 'reflect-metadata';

import { DataSource } from 'typeorm';

import { bootLine, databaseConnectionProblem, loadEnv } from '@app/config';

import { dataSourceOptions, migrate } from './data-source';

/**
 * `npm run migrate` (the image's migrate role): applies pending migrations and exits. It writes in the logs'
 * format (LOG_FORMAT: a JSON line in a pod, the sentence at a terminal), so a log pipeline reads this role too.
 */
async function main(): Promise<void> {
  const env = loadEnv();
  const dataSource = await new DataSource(dataSourceOptions(env.databaseUrl)).initialize();
  try {
    const applied = await migrate(dataSource);
    console.log(bootLine('migrate', applied.length > 0 ? `Applied migrations: ${applied.join(', ')}` : 'No pending migrations', 'info'));
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error: unknown) => {
  // What failed and that nothing was applied: a rollout waits on this job, and its log is all an operator has.
  const reason = databaseConnectionProblem(error) ?? (error instanceof Error ? error.message : String(error));
  console.error(bootLine('migrate', `Migrations not applied: ${reason}`));
  process.exit(1);
});

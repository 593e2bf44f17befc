import 'reflect-metadata';

import { BootError, loadEnv } from '@app/config';
import { deploymentComponents } from '@app/runs';

import { createApiApp } from './bootstrap';

async function main(): Promise<void> {
  const env = loadEnv();
  // Fail at boot, naming the variable, rather than at the first query.
  void env.databaseUrl;
  const app = await createApiApp(env, await deploymentComponents(env));
  await app.listen({ port: env.PORT, host: env.HOST });
}

main().catch((error: unknown) => {
  console.error(error instanceof BootError ? error.message : error);
  process.exit(1);
});

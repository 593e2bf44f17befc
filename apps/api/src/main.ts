import 'reflect-metadata';

import { EnvError, loadEnv } from '@app/config';

import { createApiApp } from './bootstrap';

async function main(): Promise<void> {
  const env = loadEnv();
  // Fail at boot, naming the variable, rather than at the first query.
  void env.databaseUrl;
  const app = await createApiApp(env);
  await app.listen({ port: env.PORT, host: env.HOST });
}

main().catch((error: unknown) => {
  console.error(error instanceof EnvError ? error.message : error);
  process.exit(1);
});

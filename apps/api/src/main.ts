// First: on a Node.js the service does not support, say so before a dependency fails to load.
import '@app/supported-node';
import 'reflect-metadata';

import { Logger } from '@nestjs/common';

import { API_VERSION, bootLine, describeBootFailure, exitOnStopSignalsWhileBooting, loadEnv, SERVICE_VERSION } from '@app/config';
import { deploymentComponents } from '@app/runs';

import { createApiApp } from './bootstrap';

async function main(): Promise<void> {
  const booted = exitOnStopSignalsWhileBooting('api');
  const env = loadEnv();
  // Fail at boot, naming the variable, rather than at the first query.
  void env.databaseUrl;
  const app = await createApiApp(env, await deploymentComponents(env));
  await app.listen({ port: env.PORT, host: env.HOST });
  // From here a signal takes the app's ordered stop (Nest's shutdown hooks): requests drain, runs answer.
  booted();
  const listening = `http://${env.HOST}:${env.PORT}`;
  new Logger('Api').log(
    { version: SERVICE_VERSION, interface_version: API_VERSION },
    `api listening on ${listening} (version ${SERVICE_VERSION}, API interface version ${API_VERSION})` +
      (env.publicUrl === listening ? '' : `; its public address (PUBLIC_URL): ${env.publicUrl}`),
  );
}

main().catch((error: unknown) => {
  // One line (what, why, what to do); the stack only at LOG_LEVEL=debug.
  console.error(bootLine('api', describeBootFailure('api', error)));
  process.exit(1);
});

import 'reflect-metadata';

import { NestFactory } from '@nestjs/core';

import { EnvError, loadEnv } from '@app/config';
import { createLogger, PinoLoggerService } from '@app/logging';

import { WorkerModule } from './worker.module';

async function main(): Promise<void> {
  const env = loadEnv();
  // Fail at boot, naming the variable, rather than at the first query.
  void env.databaseUrl;
  const logger = createLogger(env.LOG_LEVEL, 'worker');
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(env), { logger: new PinoLoggerService(logger) });
  app.enableShutdownHooks();
  // Stays up until SIGTERM; the queue and schedule loops register their own timers.
  const keepAlive = setInterval(() => undefined, 60_000);
  process.once('SIGTERM', () => clearInterval(keepAlive));
  process.once('SIGINT', () => clearInterval(keepAlive));
  logger.info('worker ready');
}

main().catch((error: unknown) => {
  console.error(error instanceof EnvError ? error.message : error);
  process.exit(1);
});

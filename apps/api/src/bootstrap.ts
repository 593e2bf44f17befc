import { randomUUID } from 'node:crypto';
import { IncomingMessage } from 'node:http';

import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';

import { Env } from '@app/config';
import { createLogger, loggerOptions, PinoLoggerService } from '@app/logging';

import { ApiModule } from './api.module';
import { mountDocs } from './openapi';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Builds the api (not yet listening): used by main.ts and nothing else needs to know how. */
export async function createApiApp(env: Env): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    logger: loggerOptions(env.LOG_LEVEL, 'api'),
    bodyLimit: BODY_LIMIT_BYTES,
    // Keep a caller's request id when it is sane, so logs can be joined across services.
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    requestIdLogLabel: 'request_id',
  });
  const app = await NestFactory.create<NestFastifyApplication>(ApiModule.forRoot(env), adapter, {
    logger: new PinoLoggerService(createLogger(env.LOG_LEVEL, 'api')),
  });
  app.getHttpAdapter().getInstance().addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.enableShutdownHooks();
  mountDocs(app, env);
  return app;
}

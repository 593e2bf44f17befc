// The framework's share of the background POST: bench/reference-server.mjs's work inside a bare Nest app on the
// FastifyAdapter (one controller, no guard, hook or interceptor), with NEST_FLOOR_VALIDATE=true also a global
// ValidationPipe and a class-validator body DTO, as the api validates bodies. Plain JavaScript, so the decorators
// are applied by hand. Started by bench/background-post.mjs; prints its URL.
import 'reflect-metadata';

import { Body, Controller, Headers, HttpCode, HttpException, Module, Param, Post, ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { IsBoolean, IsNotEmpty, IsOptional, IsString } from 'class-validator';

import { endPool, principal, storeBackgroundRun } from './reference-run.mjs';

const VALIDATE = process.env.NEST_FLOOR_VALIDATE === 'true';

class RunRequest {}
IsString()(RunRequest.prototype, 'message');
IsNotEmpty()(RunRequest.prototype, 'message');
IsOptional()(RunRequest.prototype, 'background');
IsBoolean()(RunRequest.prototype, 'background');

class RunsController {
  async start(agentId, body, authorization) {
    const user = await principal(authorization);
    if (!user) {
      throw new HttpException({ detail: 'Unauthorized' }, 401);
    }
    if (typeof body?.message !== 'string' || body.message.length === 0) {
      throw new HttpException({ detail: 'message is required' }, 422);
    }
    return storeBackgroundRun(agentId, user, body.message);
  }
}
const start = Object.getOwnPropertyDescriptor(RunsController.prototype, 'start');
Reflect.defineMetadata('design:paramtypes', [String, VALIDATE ? RunRequest : Object, String], RunsController.prototype, 'start');
Param('agentId')(RunsController.prototype, 'start', 0);
Body()(RunsController.prototype, 'start', 1);
Headers('authorization')(RunsController.prototype, 'start', 2);
HttpCode(202)(RunsController.prototype, 'start', start);
Post(':agentId/runs')(RunsController.prototype, 'start', start);
Controller('agents')(RunsController);

class FloorModule {}
Module({ controllers: [RunsController] })(FloorModule);

const app = await NestFactory.create(FloorModule, new FastifyAdapter(), { logger: false });
if (VALIDATE) {
  app.useGlobalPipes(new ValidationPipe({ transform: true, whitelist: true, forbidNonWhitelisted: true }));
}
await app.listen(0, '127.0.0.1');
console.log(JSON.stringify({ url: await app.getUrl() }));
process.on('SIGTERM', () => void app.close().then(endPool));

import { DynamicModule, Module } from '@nestjs/common';

import { ConfigModule, Env } from '@app/config';
import { DatabaseModule } from '@app/database';
import { QueueWorkerModule } from '@app/queue';
import { RunsModule } from '@app/runs';

/** Wires the libs the worker needs; no controllers, no HTTP api. */
@Module({})
export class WorkerModule {
  static forRoot(env: Env): DynamicModule {
    return { module: WorkerModule, imports: [ConfigModule.forRoot(env), DatabaseModule, RunsModule.forRoot(), QueueWorkerModule] };
  }
}

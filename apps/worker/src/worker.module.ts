import { DynamicModule, Module } from '@nestjs/common';

import { ConfigModule, Env } from '@app/config';
import { DatabaseModule } from '@app/database';
import { SchedulesWorkerModule } from '@app/schedules';

/** Wires the libs the worker needs; no controllers, no HTTP api. */
@Module({})
export class WorkerModule {
  static forRoot(env: Env): DynamicModule {
    return { module: WorkerModule, imports: [ConfigModule.forRoot(env), DatabaseModule, SchedulesWorkerModule] };
  }
}

import { DynamicModule, Module } from '@nestjs/common';

import { ConfigModule, Env } from '@app/config';
import { DatabaseModule } from '@app/database';
import { HealthModule } from '@app/health';
import { LoggingModule } from '@app/logging';
import { QueueWorkerModule } from '@app/queue';
import { Component, RunsModule } from '@app/runs';
import { SchedulesWorkerModule } from '@app/schedules';
import { TraceRetention, TracesModule } from '@app/traces';

import { WorkerHealthServer } from './health-server';

/** Wires the libs the worker needs; no controllers, no HTTP api beyond the health probes. */
@Module({})
export class WorkerModule {
  static forRoot(env: Env, components: Component[] = []): DynamicModule {
    return {
      module: WorkerModule,
      imports: [
        ConfigModule.forRoot(env),
        LoggingModule.forRoot(env, 'worker'),
        DatabaseModule,
        HealthModule,
        TracesModule.forRoot('platform-worker'),
        RunsModule.forRoot({ components, sweepLostRuns: true }),
        QueueWorkerModule,
        SchedulesWorkerModule,
      ],
      providers: [WorkerHealthServer, TraceRetention],
    };
  }
}

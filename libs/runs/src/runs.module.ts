import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { HealthModule } from '@app/health';
import { MemoriesModule } from '@app/memories';
import { QueueModule } from '@app/queue';

import { Component } from './component';
import { ComponentRegistry, DEPLOYMENT_COMPONENTS } from './component.registry';
import { RunEntity } from './run.entity';
import { RunRepository } from './run.repository';
import { RunExecutor } from './run-executor';
import { RunJobHandler } from './run-job.handler';
import { RunsService } from './runs.service';
import { SessionEntity } from './session.entity';
import { SessionRepository } from './session.repository';
import { SessionsService } from './sessions.service';
import { LostSyncRunSweeper, SyncRunLeases } from './sync-run-leases';

export interface RunsModuleOptions {
  /** The deployment's own agents, teams and workflows, besides the demo set (DEMO_COMPONENTS). */
  components?: Component[];
  /** The worker's part: fail the runs an api stopped running mid-run. */
  sweepLostRuns?: boolean;
}

@Module({})
export class RunsModule {
  static forRoot(options: RunsModuleOptions = {}): DynamicModule {
    return {
      module: RunsModule,
      imports: [TypeOrmModule.forFeature([RunEntity, SessionEntity]), QueueModule, MemoriesModule, HealthModule],
      providers: [
        { provide: DEPLOYMENT_COMPONENTS, useValue: options.components ?? [] },
        ComponentRegistry,
        RunRepository,
        SessionRepository,
        RunExecutor,
        RunJobHandler,
        RunsService,
        SessionsService,
        SyncRunLeases,
        ...(options.sweepLostRuns ? [LostSyncRunSweeper] : []),
      ],
      exports: [ComponentRegistry, RunExecutor, RunRepository, RunsService, SessionsService],
    };
  }
}

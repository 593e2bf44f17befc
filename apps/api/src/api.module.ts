import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';

import { a2aProviders } from '@app/a2a';
import { AuthModule, ScopeGuard } from '@app/auth';
import { ConfigModule, Env } from '@app/config';
import { DatabaseModule } from '@app/database';
import { HealthModule } from '@app/health';
import { LoggingModule } from '@app/logging';
import { MemoriesModule } from '@app/memories';
import { QueueModule } from '@app/queue';
import { Component, RunsModule } from '@app/runs';
import { SchedulesModule } from '@app/schedules';
import { ServiceAccountsModule } from '@app/service-accounts';
import { TracesModule } from '@app/traces';
import { websocketProviders } from '@app/websocket';

import { AgentA2AController, TeamA2AController, WorkflowA2AController } from './a2a/a2a.controller';
import { DiscoveryController } from './discovery/discovery.controller';
import { ServiceInfoService } from './discovery/service-info.service';
import { HttpExceptionFilter } from './errors/http-exception.filter';
import { OneLineErrors } from './errors/one-line-errors';
import { RequestValidationPipe } from './errors/validation.pipe';
import { ReadinessController } from './health/readiness.controller';
import { mcpWiring } from './mcp/mcp.wiring';
import { MemoriesController } from './memories/memories.controller';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsScrape } from './metrics/metrics-scrape';
import { ApiMetricsServer } from './metrics/metrics-server';
import { QueueController } from './queue/queue.controller';
import { AgentRunsController, TeamRunsController, WorkflowRunsController } from './runs/component-runs.controller';
import { SessionsController } from './runs/sessions.controller';
import { SchedulesController } from './schedules/schedules.controller';
import { ServiceAccountsController } from './service-accounts/service-accounts.controller';
import { StopLog } from './stop-log';
import { TracesController } from './traces/traces.controller';

/** Wires the libs into the HTTP api; holds no rules of its own. */
@Module({})
export class ApiModule {
  static forRoot(env: Env, components: Component[] = []): DynamicModule {
    const mcp = mcpWiring(env);
    return {
      module: ApiModule,
      imports: [
        ConfigModule.forRoot(env),
        LoggingModule.forRoot(env, 'api'),
        DatabaseModule,
        AuthModule,
        ServiceAccountsModule,
        HealthModule,
        RunsModule.forRoot({ components }),
        MemoriesModule,
        TracesModule.forRoot('platform-api'),
        QueueModule,
        SchedulesModule,
        ...mcp.imports,
      ],
      controllers: [
        DiscoveryController,
        ReadinessController,
        ServiceAccountsController,
        AgentRunsController,
        TeamRunsController,
        WorkflowRunsController,
        SessionsController,
        MemoriesController,
        TracesController,
        QueueController,
        MetricsController,
        SchedulesController,
        AgentA2AController,
        TeamA2AController,
        WorkflowA2AController,
        ...mcp.controllers,
      ],
      providers: [
        ...mcp.providers,
        ...a2aProviders(OneLineErrors),
        ...websocketProviders(OneLineErrors),
        ServiceInfoService,
        MetricsScrape,
        ApiMetricsServer,
        StopLog,
        { provide: APP_GUARD, useClass: ScopeGuard },
        { provide: APP_FILTER, useClass: HttpExceptionFilter },
        { provide: APP_PIPE, useClass: RequestValidationPipe },
      ],
    };
  }
}

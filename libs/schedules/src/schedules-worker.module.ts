import { Module } from '@nestjs/common';

import { HealthModule } from '@app/health';
import { ServiceAccountsModule } from '@app/service-accounts';

import { ScheduleCredentialsModule } from './schedule-credentials.module';
import { ScheduleDispatchRepository } from './schedule-dispatch.repository';
import { ScheduleFireMetrics } from './schedule-fire-metrics';
import { ScheduleFireWorker } from './schedule-fire-worker';
import { ScheduleFirer } from './schedule-firer';
import { ScheduleTicker } from './schedule-ticker';

/** What a worker imports to fire schedules; nothing else of the worker is needed. */
@Module({
  imports: [ScheduleCredentialsModule, ServiceAccountsModule, HealthModule],
  providers: [ScheduleDispatchRepository, ScheduleFireMetrics, ScheduleFirer, ScheduleFireWorker, ScheduleTicker],
})
export class SchedulesWorkerModule {}

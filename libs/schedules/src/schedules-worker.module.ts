import { Module } from '@nestjs/common';

import { ServiceAccountsModule } from '@app/service-accounts';

import { ScheduleCredentialsModule } from './schedule-credentials.module';
import { ScheduleDispatchRepository } from './schedule-dispatch.repository';
import { ScheduleFireWorker } from './schedule-fire-worker';
import { ScheduleFirer } from './schedule-firer';
import { ScheduleTicker } from './schedule-ticker';

/** What a worker imports to fire schedules; nothing else of the worker is needed. */
@Module({
  imports: [ScheduleCredentialsModule, ServiceAccountsModule],
  providers: [ScheduleDispatchRepository, ScheduleFirer, ScheduleFireWorker, ScheduleTicker],
})
export class SchedulesWorkerModule {}

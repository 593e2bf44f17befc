import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';

import { ServiceAccountsModule } from '@app/service-accounts';

import { ScheduleCredentialsModule } from './schedule-credentials.module';
import { ScheduleDispatchRepository } from './schedule-dispatch.repository';
import { ScheduleFirer } from './schedule-firer';
import { ScheduleTicker } from './schedule-ticker';

/** What a worker imports to fire schedules; nothing else of the worker is needed. */
@Module({
  imports: [ScheduleModule.forRoot(), ScheduleCredentialsModule, ServiceAccountsModule],
  providers: [ScheduleDispatchRepository, ScheduleFirer, ScheduleTicker],
})
export class SchedulesWorkerModule {}

import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { ServiceAccountsModule } from '@app/service-accounts';

import { ScheduleEntity } from './schedule.entity';
import { ScheduleRepository } from './schedule.repository';
import { ScheduleMetricsService } from './schedule-metrics.service';
import { ScheduleRunEntity } from './schedule-run.entity';
import { ScheduleRunRepository } from './schedule-run.repository';
import { SchedulesService } from './schedules.service';

/** The schedule resource as the api serves it. */
@Module({
  imports: [TypeOrmModule.forFeature([ScheduleEntity, ScheduleRunEntity]), ServiceAccountsModule],
  providers: [ScheduleRepository, ScheduleRunRepository, SchedulesService, ScheduleMetricsService],
  exports: [SchedulesService, ScheduleMetricsService],
})
export class SchedulesModule {}

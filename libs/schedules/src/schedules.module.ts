import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { ScheduleEntity } from './schedule.entity';
import { ScheduleRepository } from './schedule.repository';
import { ScheduleMetricsService } from './schedule-metrics.service';
import { ScheduleRunEntity } from './schedule-run.entity';
import { ScheduleRunRepository } from './schedule-run.repository';
import { SchedulesService } from './schedules.service';

/** The schedule resource as the api serves it. */
@Module({
  imports: [TypeOrmModule.forFeature([ScheduleEntity, ScheduleRunEntity])],
  providers: [ScheduleRepository, ScheduleRunRepository, SchedulesService, ScheduleMetricsService],
  exports: [SchedulesService, ScheduleMetricsService],
})
export class SchedulesModule {}

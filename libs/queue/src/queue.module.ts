import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { CancellationIntentEntity } from './cancellation-intent.entity';
import { CancellationIntents } from './cancellation-intents';
import { QueueJobEntity } from './job.entity';
import { QueueJobRepository } from './job.repository';
import { JobOutcomeCounterEntity } from './job-outcome-counter.entity';
import { JobProducer } from './job-producer';
import { QueueAdminService } from './queue-admin.service';
import { QueueEnabledGuard } from './queue-enabled.guard';
import { QueueMetricsService } from './queue-metrics.service';

/** The queue's producer side and admin operations; the worker loop lives in QueueWorkerModule. */
@Module({
  imports: [TypeOrmModule.forFeature([QueueJobEntity, CancellationIntentEntity, JobOutcomeCounterEntity])],
  providers: [CancellationIntents, JobProducer, QueueJobRepository, QueueAdminService, QueueMetricsService, QueueEnabledGuard],
  exports: [CancellationIntents, JobProducer, QueueAdminService, QueueMetricsService, QueueEnabledGuard],
})
export class QueueModule {}

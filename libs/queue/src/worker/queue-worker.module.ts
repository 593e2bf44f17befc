import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';

import { HealthModule } from '@app/health';

import { QueueWorkerService } from './queue-worker.service';

/** The worker app's job loop; the handlers come from the modules imported beside it (@HandlesJobs). */
@Module({
  imports: [DiscoveryModule, HealthModule],
  providers: [QueueWorkerService],
})
export class QueueWorkerModule {}

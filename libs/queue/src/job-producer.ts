import { Injectable } from '@nestjs/common';
import { EntityManager, In, IsNull } from 'typeorm';

import { CancellationIntents } from './cancellation-intents';
import { enqueueJobs, EnqueueRequest } from './enqueue';
import { QueueJobEntity } from './job.entity';
import { JobStatus } from './job-status';

export interface Enqueued {
  id: string;
  status: JobStatus;
  /** False when the idempotency key matched an existing job, which is returned instead. */
  created: boolean;
}

/** States a cancel turns into `cancelled` at once; a running job stops at its next checkpoint. */
const WAITING: JobStatus[] = ['queued', 'paused'];

/**
 * The producer side of the queue, always inside the caller's transaction so a job exists
 * exactly when the row it works on (the run) does.
 */
@Injectable()
export class JobProducer {
  constructor(private readonly intents: CancellationIntents) {}

  async enqueue(manager: EntityManager, request: EnqueueRequest & { id: string }): Promise<Enqueued> {
    const [inserted] = await enqueueJobs(manager, [request]);
    if (inserted) {
      return { id: inserted, status: 'queued', created: true };
    }
    const existing = await manager.findOneByOrFail(QueueJobEntity, {
      userId: request.userId ?? IsNull(),
      idempotencyKey: request.idempotencyKey ?? IsNull(),
    });
    return { id: existing.id, status: existing.status, created: false };
  }

  /**
   * Records a cancellation intent; a waiting job becomes `cancelled` at once (a worker's claim
   * and this update serialise on the row, so a job cancelled here never starts).
   * Returns the job's status afterwards, or null when there is no job.
   */
  async cancel(manager: EntityManager, id: string, requestedBy: string | null): Promise<JobStatus | null> {
    await this.intents.record(manager, id, requestedBy);
    await manager
      .createQueryBuilder()
      .update(QueueJobEntity)
      .set({ status: 'cancelled', completedAt: () => 'now()', updatedAt: () => 'now()', error: 'Cancelled before it started' })
      .where({ id, status: In(WAITING) })
      .execute();
    const job = await manager.findOneBy(QueueJobEntity, { id });
    return job?.status ?? null;
  }
}

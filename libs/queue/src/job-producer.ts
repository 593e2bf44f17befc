import { Injectable } from '@nestjs/common';
import { EntityManager, In, IsNull } from 'typeorm';

import { JobPayload, QueueJobEntity } from './job.entity';
import { JobStatus, RUN_JOB_TYPE } from './job-status';
import { JOBS_READY_CHANNEL } from './notify';
import { CancellationIntents } from './cancellation-intents';

export interface EnqueueRequest {
  /** The job id: for a background run, the run id. */
  id: string;
  jobType?: string;
  componentType: string;
  componentId: string;
  sessionId: string;
  userId: string | null;
  payload: JobPayload;
  idempotencyKey?: string | null;
  maxAttempts?: number;
}

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

  async enqueue(manager: EntityManager, request: EnqueueRequest): Promise<Enqueued> {
    const inserted = await manager
      .createQueryBuilder()
      .insert()
      .into(QueueJobEntity)
      .values({
        id: request.id,
        jobType: request.jobType ?? RUN_JOB_TYPE,
        componentType: request.componentType,
        componentId: request.componentId,
        sessionId: request.sessionId,
        userId: request.userId,
        payload: request.payload,
        idempotencyKey: request.idempotencyKey ?? null,
        maxAttempts: request.maxAttempts ?? 1,
      })
      .orIgnore()
      .returning(['id'])
      .execute();
    if (inserted.raw.length === 0) {
      const existing = await manager.findOneByOrFail(QueueJobEntity, {
        userId: request.userId ?? IsNull(),
        idempotencyKey: request.idempotencyKey ?? IsNull(),
      });
      return { id: existing.id, status: existing.status, created: false };
    }
    // Delivered when the transaction commits, never before the job is visible.
    await manager.query('SELECT pg_notify($1, $2)', [JOBS_READY_CHANNEL, '']);
    return { id: request.id, status: 'queued', created: true };
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

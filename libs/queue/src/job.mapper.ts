import { toEpoch } from '@app/database';

import { JobDto } from './job.dto';
import { QueueJobEntity } from './job.entity';

/** A job row as operators see it. */
export function toJobDto(job: QueueJobEntity): JobDto {
  return {
    id: job.id,
    component_type: job.componentType,
    component_id: job.componentId,
    session_id: job.sessionId,
    job_type: job.jobType,
    user_id: job.userId,
    payload: job.payload,
    status: job.status,
    attempt: job.attempt,
    max_attempts: job.maxAttempts,
    idempotency_key: job.idempotencyKey,
    available_at: toEpoch(job.availableAt),
    locked_by: job.lockedBy,
    locked_at: toEpoch(job.lockedAt),
    error: job.error,
    created_at: toEpoch(job.createdAt),
    updated_at: toEpoch(job.updatedAt),
    completed_at: toEpoch(job.completedAt),
  };
}

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { isUUID } from 'class-validator';
import { EntityManager, Repository } from 'typeorm';

import { toEpoch } from '@app/database';
import { fetchPage, Page, toPage } from '@app/pagination';
import { Env } from '@app/config';

import { CancellationIntents } from './cancellation-intents';
import { JobDto, JobSortField, ListJobsQuery, QueueStatsDto, RequeueQuery } from './job.dto';
import { QueueJobEntity } from './job.entity';
import { JOB_STATUSES, JobStatus } from './job-status';
import { JOBS_READY_CHANNEL } from './notify';
import { QueueErrorCode, QueueException } from './queue.exception';

const SORT_COLUMNS: Record<JobSortField, string> = {
  created_at: 'job.created_at',
  updated_at: 'job.updated_at',
  completed_at: 'job.completed_at',
  status: 'job.status',
  attempt: 'job.attempt',
  component_type: 'job.component_type',
  component_id: 'job.component_id',
  user_id: 'job.user_id',
};

/** The operator's view of the queue: list, one job, stats, and the requeue remedy. Admin-gated at the route. */
@Injectable()
export class QueueAdminService {
  constructor(
    private readonly env: Env,
    private readonly intents: CancellationIntents,
    @InjectRepository(QueueJobEntity) private readonly jobs: Repository<QueueJobEntity>,
  ) {}

  async list(query: ListJobsQuery): Promise<Page<JobDto>> {
    const startedAt = performance.now();
    const request = query.toPageRequest();
    const builder = this.jobs.createQueryBuilder('job');
    if (query.status?.length) {
      builder.where('job.status IN (:...statuses)', { statuses: [...new Set(query.status)] });
    }
    const [rows, total] = await fetchPage(builder, request, { sort: SORT_COLUMNS[request.sortBy], id: 'job.id' });
    return toPage(request, rows.map(toJobDto), total, startedAt);
  }

  async get(id: string): Promise<JobDto> {
    return toJobDto(await this.find(this.jobs.manager, id, false));
  }

  async stats(): Promise<QueueStatsDto> {
    const rows: { status: JobStatus; count: number; oldest: number | null }[] = await this.jobs.query(
      `SELECT status, count(*)::int AS count,
              CASE WHEN status = 'queued' THEN floor(extract(epoch FROM now() - min(created_at)))::int END AS oldest
       FROM queue_jobs GROUP BY status`,
    );
    const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
    rows.forEach((row) => (counts[row.status] = row.count));
    return { counts, oldest_queued_age_seconds: rows.find((row) => row.status === 'queued')?.oldest ?? null };
  }

  /**
   * One more execution for a failed or cancelled job: `queued`, max_attempts + 1, the last
   * error kept for the record. Status, budget and any cleared cancel change in one transaction.
   */
  async requeue(id: string, options: RequeueQuery): Promise<JobDto> {
    return this.jobs.manager.transaction(async (manager) => {
      const job = await this.find(manager, id, true);
      this.assertRequeueable(job, options);
      if (options.clear_cancellation) {
        await this.intents.clear(manager, id);
      }
      await manager.update(QueueJobEntity, { id }, {
        status: 'queued',
        maxAttempts: () => 'max_attempts + 1',
        availableAt: () => 'now()',
        lockedBy: null,
        lockedAt: null,
        heartbeatAt: null,
        completedAt: null,
        updatedAt: () => 'now()',
      });
      await manager.query('SELECT pg_notify($1, $2)', [JOBS_READY_CHANNEL, '']);
      return toJobDto(await this.find(manager, id, false));
    });
  }

  private assertRequeueable(job: QueueJobEntity, options: RequeueQuery): void {
    if (job.status !== 'failed' && job.status !== 'cancelled') {
      throw new QueueException(QueueErrorCode.NotRequeueable, `Job ${job.id} is ${job.status}; only failed and cancelled jobs can be requeued`);
    }
    const grace = this.env.QUEUE_LOCK_GRACE_SECONDS;
    const failedRecently = job.status === 'failed' && job.completedAt !== null && Date.now() - job.completedAt.getTime() < grace * 1000;
    if (failedRecently && !options.force) {
      throw new QueueException(
        QueueErrorCode.MayStillBeRunning,
        `Job ${job.id} failed within the last ${grace}s and its worker may still be executing (a sweep proves lost heartbeats, not stopped execution). ` +
          'Retry after the lock grace elapses, or pass force=true to override.',
      );
    }
  }

  private async find(manager: EntityManager, id: string, lock: boolean): Promise<QueueJobEntity> {
    const job = isUUID(id)
      ? await manager.findOne(QueueJobEntity, { where: { id }, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) })
      : null;
    if (!job) {
      throw new QueueException(QueueErrorCode.JobNotFound, `Queue job '${id}' not found`);
    }
    return job;
  }
}

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

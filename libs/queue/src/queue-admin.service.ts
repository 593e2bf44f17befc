import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { isUUID } from 'class-validator';
import { EntityManager, Repository } from 'typeorm';

import { Env } from '@app/config';
import { ValidationFailedException } from '@app/errors';
import { fetchPage, Page, toPage } from '@app/pagination';

import { CancellationIntents } from './cancellation-intents';
import {
  BULK_SKIPPED_SHOWN,
  BulkJobsDto,
  BulkJobsResultDto,
  JobDto,
  JobFilterDto,
  JobSortField,
  ListJobsQuery,
  QueueStatsDto,
  RequeueQuery,
  SkippedJobDto,
} from './job.dto';
import { QueueJobEntity } from './job.entity';
import { toJobDto } from './job.mapper';
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

/** Jobs changed per statement (and transaction) of a bulk operation: 10,000 jobs never hold one long transaction. */
const BULK_BATCH = 500;

interface Selected {
  id: string;
  status: JobStatus;
  /** Failed within the lock grace: its worker may still be executing. */
  recent: boolean;
}

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
      await manager.update(
        QueueJobEntity,
        { id },
        {
          status: 'queued',
          maxAttempts: () => 'max_attempts + 1',
          availableAt: () => 'now()',
          lockedBy: null,
          lockedAt: null,
          heartbeatAt: null,
          completedAt: null,
          updatedAt: () => 'now()',
        },
      );
      await manager.query('SELECT pg_notify($1, $2)', [JOBS_READY_CHANNEL, '']);
      return toJobDto(await this.find(manager, id, false));
    });
  }

  /**
   * Requeue by filter: the single-job rules applied to each selected job (failed or cancelled;
   * not failed within the lock grace unless forced; max_attempts + 1), in batches, each change
   * fenced on the state it was selected in. A dry run (the default) only counts.
   */
  async bulkRequeue(request: BulkJobsDto): Promise<BulkJobsResultDto> {
    return this.bulk(request, {
      reasonToSkip: (job) =>
        job.status !== 'failed' && job.status !== 'cancelled' ? `status:${job.status}` : job.recent && !request.force ? 'lock_grace' : null,
      apply: async (manager, ids) => {
        // TypeORM answers an UPDATE with [rows, affected count].
        const [changed]: [{ id: string }[], number] = await manager.query(
          `UPDATE queue_jobs SET status = 'queued', max_attempts = max_attempts + 1, available_at = now(), locked_by = NULL,
                  locked_at = NULL, heartbeat_at = NULL, completed_at = NULL, updated_at = now()
           WHERE id = ANY ($1::uuid[]) AND status IN ('failed', 'cancelled')
             AND ($2 OR status <> 'failed' OR completed_at IS NULL OR completed_at <= now() - make_interval(secs => $3))
           RETURNING id`,
          [ids, request.force, this.env.QUEUE_LOCK_GRACE_SECONDS],
        );
        if (changed.length > 0) {
          if (request.clear_cancellation) {
            await this.intents.clear(
              manager,
              changed.map((row) => row.id),
            );
          }
          await manager.query('SELECT pg_notify($1, $2)', [JOBS_READY_CHANNEL, '']);
        }
        return changed.map((row) => row.id);
      },
    });
  }

  /** Cancel by filter: queued and paused jobs become cancelled; running and final jobs are never touched. */
  async bulkCancel(request: BulkJobsDto): Promise<BulkJobsResultDto> {
    return this.bulk(request, {
      reasonToSkip: (job) => (job.status === 'queued' || job.status === 'paused' ? null : `status:${job.status}`),
      apply: async (manager, ids) => {
        const [changed]: [{ id: string }[], number] = await manager.query(
          `UPDATE queue_jobs SET status = 'cancelled', completed_at = now(), updated_at = now(), error = 'Cancelled by an operator before it started',
                  locked_by = NULL, locked_at = NULL, heartbeat_at = NULL
           WHERE id = ANY ($1::uuid[]) AND status IN ('queued', 'paused')
           RETURNING id`,
          [ids],
        );
        return changed.map((row) => row.id);
      },
    });
  }

  private async bulk(
    request: BulkJobsDto,
    rules: { reasonToSkip: (job: Selected) => string | null; apply: (manager: EntityManager, ids: string[]) => Promise<string[]> },
  ): Promise<BulkJobsResultDto> {
    const selected = await this.select(request.filter, request.limit);
    const skipped: SkippedJobDto[] = [];
    const candidates: string[] = [];
    for (const job of selected) {
      const reason = rules.reasonToSkip(job);
      if (reason) {
        skipped.push({ id: job.id, reason });
      } else {
        candidates.push(job.id);
      }
    }
    let changed = candidates.length;
    if (!request.dry_run) {
      changed = 0;
      for (let start = 0; start < candidates.length; start += BULK_BATCH) {
        const batch = candidates.slice(start, start + BULK_BATCH);
        const done = new Set(await this.jobs.manager.transaction((manager) => rules.apply(manager, batch)));
        changed += done.size;
        // The fence: a job that moved since it was selected is left as it is now.
        skipped.push(...batch.filter((id) => !done.has(id)).map((id) => ({ id, reason: 'moved' })));
      }
    }
    return { dry_run: request.dry_run, matched: selected.length, changed, skipped: skipped.slice(0, BULK_SKIPPED_SHOWN) };
  }

  /** The jobs a filter selects, oldest first; an empty filter would select everything, so it is refused. */
  private async select(filter: JobFilterDto, limit: number): Promise<Selected[]> {
    const clauses: [unknown, (placeholder: string) => string][] = [
      [filter.status?.length ? [...new Set(filter.status)] : undefined, (p) => `status = ANY (${p}::varchar[])`],
      [filter.component_type, (p) => `component_type = ${p}`],
      [filter.component_id, (p) => `component_id = ${p}`],
      [filter.created_after, (p) => `created_at >= to_timestamp(${p})`],
      [filter.created_before, (p) => `created_at < to_timestamp(${p})`],
      [filter.error_contains, (p) => `strpos(lower(error), lower(${p})) > 0`],
      [filter.ids?.length ? filter.ids : undefined, (p) => `id = ANY (${p}::uuid[])`],
    ];
    const conditions: string[] = [];
    const params: unknown[] = [];
    for (const [value, condition] of clauses) {
      if (value !== undefined) {
        params.push(value);
        conditions.push(condition(`$${params.length}`));
      }
    }
    if (conditions.length === 0) {
      throw new ValidationFailedException([
        {
          loc: ['body', 'filter'],
          msg: 'filter must name at least one condition (status, component, time window, error text or ids)',
          type: 'empty_filter',
          input: filter,
          ctx: {},
        },
      ]);
    }
    params.push(this.env.QUEUE_LOCK_GRACE_SECONDS, limit);
    return this.jobs.query(
      `SELECT id, status, (status = 'failed' AND completed_at > now() - make_interval(secs => $${params.length - 1})) AS recent
       FROM queue_jobs WHERE ${conditions.join(' AND ')} ORDER BY created_at, id LIMIT $${params.length}`,
      params,
    );
  }

  private assertRequeueable(job: QueueJobEntity, options: RequeueQuery): void {
    if (job.status !== 'failed' && job.status !== 'cancelled') {
      throw new QueueException(
        QueueErrorCode.NotRequeueable,
        `Job ${job.id} is ${job.status}; only failed and cancelled jobs can be requeued`,
      );
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

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { isUUID } from 'class-validator';
import { EntityManager, Repository } from 'typeorm';

import { PageRequest } from '@app/pagination';

import { JobFilterDto, JobSortField } from './job.dto';
import { QueueJobEntity } from './job.entity';
import { JOB_STATUSES, JobStatus } from './job-status';
import { JOBS_READY_CHANNEL } from './notify';

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

/** A job chosen by a bulk filter, with what the rules need to know about it. */
export interface SelectedJob {
  id: string;
  status: JobStatus;
  /** Failed within the lock grace: its worker may still be executing. */
  recent: boolean;
}

/**
 * The operator side's SQL about queue jobs (the worker's lives in worker/job-store.ts). Counts come
 * from the per-status deltas the table's triggers keep, so no read here grows with history.
 */
@Injectable()
export class QueueJobRepository {
  constructor(@InjectRepository(QueueJobEntity) private readonly jobs: Repository<QueueJobEntity>) {}

  get manager(): EntityManager {
    return this.jobs.manager;
  }

  /** Exact counts of every status, whatever the table's size. */
  async countByStatus(): Promise<Record<JobStatus, number>> {
    const rows: { status: JobStatus; count: string }[] = await this.jobs.query(
      `SELECT status, sum(delta) AS count FROM queue_job_counts GROUP BY status`,
    );
    const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
    rows.forEach((row) => (counts[row.status] = Number(row.count)));
    return counts;
  }

  /**
   * How long the longest-waiting queued job has waited to be claimed: since it became available (enqueued, or
   * requeued, or its retry backoff over), not since it was created, so a bulk requeue of old jobs or a retry
   * waiting out its backoff is no backlog. Jobs a worker holds ahead are its own. From the claim index: one entry.
   */
  async oldestQueuedAgeSeconds(): Promise<number | null> {
    const [row]: { age: number | null }[] = await this.jobs.query(
      `SELECT floor(extract(epoch FROM now() - min(available_at)))::int AS age FROM queue_jobs
        WHERE status = 'queued' AND locked_by IS NULL AND available_at <= now()`,
    );
    return row.age;
  }

  /** One page, newest first by default, and the exact total (from the counts: the only filter is status). */
  async page(statuses: JobStatus[], request: PageRequest<JobSortField>): Promise<[QueueJobEntity[], number]> {
    const builder = this.jobs.createQueryBuilder('job');
    if (statuses.length > 0) {
      builder.where('job.status IN (:...statuses)', { statuses });
    }
    if (statuses.length > 0 && statuses.every((status) => status === 'running')) {
      // Always true of a running job (its worker holds the lock), and it lets PostgreSQL read the few locked jobs
      // from their partial index instead of walking every job by creation time when fewer run than a page holds.
      builder.andWhere('job.locked_by IS NOT NULL');
    }
    const ascending = request.sortOrder === 'asc';
    const rows = await builder
      .orderBy(SORT_COLUMNS[request.sortBy], ascending ? 'ASC' : 'DESC', ascending ? 'NULLS LAST' : 'NULLS FIRST')
      .addOrderBy('job.id', 'ASC')
      .offset(request.offset)
      .limit(request.limit)
      .getMany();
    const counts = await this.countByStatus();
    const counted: readonly JobStatus[] = statuses.length > 0 ? statuses : JOB_STATUSES;
    const total = counted.reduce((sum, status) => sum + counts[status], 0);
    return [rows, total];
  }

  async findById(manager: EntityManager, id: string, lock: boolean): Promise<QueueJobEntity | null> {
    if (!isUUID(id)) {
      return null;
    }
    return manager.findOne(QueueJobEntity, { where: { id }, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
  }

  /** The jobs a filter selects, oldest first, at most `limit`; null when the filter names no condition (it would select every job). */
  async select(filter: JobFilterDto, limit: number, lockGraceSeconds: number): Promise<SelectedJob[] | null> {
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
      return null;
    }
    params.push(lockGraceSeconds, limit);
    return this.jobs.query(
      `SELECT id, status, (status = 'failed' AND completed_at > now() - make_interval(secs => $${params.length - 1})) AS recent
       FROM queue_jobs WHERE ${conditions.join(' AND ')} ORDER BY created_at, id LIMIT $${params.length}`,
      params,
    );
  }

  /**
   * Requeues a batch, fenced on the state the jobs were selected in (failed or cancelled; a recent
   * failure only when forced). Returns the ids changed.
   */
  async requeueBatch(manager: EntityManager, ids: string[], force: boolean, lockGraceSeconds: number): Promise<string[]> {
    // TypeORM answers an UPDATE with [rows, affected count].
    const [changed]: [{ id: string }[], number] = await manager.query(
      `UPDATE queue_jobs SET status = 'queued', max_attempts = max_attempts + 1, available_at = now(), locked_by = NULL,
              locked_at = NULL, heartbeat_at = NULL, completed_at = NULL, updated_at = now()
       WHERE id = ANY ($1::uuid[]) AND status IN ('failed', 'cancelled')
         AND ($2 OR status <> 'failed' OR completed_at IS NULL OR completed_at <= now() - make_interval(secs => $3))
       RETURNING id`,
      [ids, force, lockGraceSeconds],
    );
    if (changed.length > 0) {
      await this.notifyReady(manager);
    }
    return changed.map((row) => row.id);
  }

  /** Cancels a batch of waiting jobs (queued, also when a worker holds them reserved, or paused). Returns the ids changed. */
  async cancelBatch(manager: EntityManager, ids: string[]): Promise<string[]> {
    const [changed]: [{ id: string }[], number] = await manager.query(
      `UPDATE queue_jobs SET status = 'cancelled', completed_at = now(), updated_at = now(), error = 'Cancelled by an operator before it started',
              locked_by = NULL, locked_at = NULL, heartbeat_at = NULL
       WHERE id = ANY ($1::uuid[]) AND status IN ('queued', 'paused')
       RETURNING id`,
      [ids],
    );
    return changed.map((row) => row.id);
  }

  /** Wakes idle workers when the transaction commits. */
  private async notifyReady(manager: EntityManager): Promise<void> {
    await manager.query('SELECT pg_notify($1, $2)', [JOBS_READY_CHANNEL, '']);
  }
}

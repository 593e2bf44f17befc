import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';

import { Env } from '@app/config';
import { ValidationFailedException } from '@app/errors';
import { Page, toPage } from '@app/pagination';

import { CancellationIntents } from './cancellation-intents';
import {
  BULK_SKIPPED_SHOWN,
  BulkJobsDto,
  BulkJobsResultDto,
  JobDto,
  JobFilterDto,
  ListJobsQuery,
  QueueStatsDto,
  RequeueQuery,
  SkippedJobDto,
} from './job.dto';
import { QueueJobEntity } from './job.entity';
import { toJobDto } from './job.mapper';
import { QueueJobRepository, SelectedJob } from './job.repository';
import { QueueErrorCode, QueueException } from './queue.exception';

/** Jobs changed per statement (and transaction) of a bulk operation: 10,000 jobs never hold one long transaction. */
const BULK_BATCH = 500;

/** The operator's view of the queue: list, one job, stats, and the requeue remedy. Admin-gated at the route. */
@Injectable()
export class QueueAdminService {
  constructor(
    private readonly env: Env,
    private readonly intents: CancellationIntents,
    private readonly jobs: QueueJobRepository,
  ) {}

  async list(query: ListJobsQuery): Promise<Page<JobDto>> {
    const startedAt = performance.now();
    const request = query.toPageRequest();
    const [rows, total] = await this.jobs.page([...new Set(query.status ?? [])], request);
    return toPage(request, rows.map(toJobDto), total, startedAt);
  }

  async get(id: string): Promise<JobDto> {
    return toJobDto(await this.find(this.jobs.manager, id, false));
  }

  async stats(): Promise<QueueStatsDto> {
    const [counts, oldest] = await Promise.all([this.jobs.countByStatus(), this.jobs.oldestQueuedAgeSeconds()]);
    return { counts, oldest_queued_age_seconds: oldest };
  }

  /**
   * One more execution for a failed or cancelled job: `queued`, max_attempts + 1, the last
   * error kept for the record. Status, budget and any cleared cancel change in one transaction.
   */
  async requeue(id: string, options: RequeueQuery): Promise<JobDto> {
    return this.jobs.manager.transaction(async (manager) => {
      const job = await this.find(manager, id, true);
      this.assertRequeueable(job);
      // The bulk route's statement, for one job: the lock grace is judged on the database's clock alike.
      const grace = this.env.QUEUE_LOCK_GRACE_SECONDS;
      if ((await this.jobs.requeueBatch(manager, [id], options.force, grace)).length === 0) {
        // The row is locked and failed or cancelled: only a failure within the grace is left out.
        throw new QueueException(
          QueueErrorCode.MayStillBeRunning,
          `Job ${id} failed within the last ${grace}s and its worker may still be executing (a sweep proves lost heartbeats, not stopped execution). ` +
            'Retry after the lock grace elapses, or pass force=true to override.',
        );
      }
      if (options.clear_cancellation) {
        await this.intents.clear(manager, id);
      }
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
        const changed = await this.jobs.requeueBatch(manager, ids, request.force, this.env.QUEUE_LOCK_GRACE_SECONDS);
        if (changed.length > 0 && request.clear_cancellation) {
          await this.intents.clear(manager, changed);
        }
        return changed;
      },
    });
  }

  /** Cancel by filter: queued and paused jobs become cancelled; running and final jobs are never touched. */
  async bulkCancel(request: BulkJobsDto): Promise<BulkJobsResultDto> {
    return this.bulk(request, {
      reasonToSkip: (job) => (job.status === 'queued' || job.status === 'paused' ? null : `status:${job.status}`),
      apply: (manager, ids) => this.jobs.cancelBatch(manager, ids),
    });
  }

  private async bulk(
    request: BulkJobsDto,
    rules: { reasonToSkip: (job: SelectedJob) => string | null; apply: (manager: EntityManager, ids: string[]) => Promise<string[]> },
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
  private async select(filter: JobFilterDto, limit: number): Promise<SelectedJob[]> {
    const selected = await this.jobs.select(filter, limit, this.env.QUEUE_LOCK_GRACE_SECONDS);
    if (!selected) {
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
    return selected;
  }

  private assertRequeueable(job: QueueJobEntity): void {
    if (job.status !== 'failed' && job.status !== 'cancelled') {
      throw new QueueException(
        QueueErrorCode.NotRequeueable,
        `Job ${job.id} is ${job.status}; only failed and cancelled jobs can be requeued`,
      );
    }
  }

  private async find(manager: EntityManager, id: string, lock: boolean): Promise<QueueJobEntity> {
    const job = await this.jobs.findById(manager, id, lock);
    if (!job) {
      throw new QueueException(QueueErrorCode.JobNotFound, `Queue job '${id}' not found`);
    }
    return job;
  }
}

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { ClientBase } from 'pg';
import { EntityManager, IsNull, Repository, SelectQueryBuilder } from 'typeorm';

import { DataScope } from '@app/access';
import { fetchPage, PageRequest } from '@app/pagination';
import { ExpiredJob, QueueJobEntity } from '@app/queue';

import { ComponentKind, ModelUsage, Turn } from './component';
import { RunEntity } from './run.entity';
import { RunStatus } from './run-status';
import { SessionRunSortField } from './session.dto';

export const RUN_IDEMPOTENCY_CONSTRAINT = 'UQ_runs_idempotency';

export interface RunOutcome {
  status: RunStatus;
  content: string | null;
  error: string | null;
  /** What the run's model calls consumed, when a component reported it. */
  usage?: ModelUsage | null;
}

/** Earlier turns a run sees: at most this many runs back, so a long session costs a bounded read. */
const HISTORY_RUNS = 50;

/** Every read takes the caller's DataScope first and joins the run's queue job, the authority on a background run's state. */
@Injectable()
export class RunRepository {
  constructor(@InjectRepository(RunEntity) private readonly rows: Repository<RunEntity>) {}

  async insert(manager: EntityManager, run: RunEntity): Promise<void> {
    await manager.insert(RunEntity, run);
  }

  findById(scope: DataScope, id: string, component?: { kind: ComponentKind; id: string }): Promise<RunEntity | null> {
    const query = this.withJob(scope).andWhere('run.id = :id', { id });
    if (component) {
      query.andWhere('run.component_type = :kind AND run.component_id = :componentId', { kind: component.kind, componentId: component.id });
    }
    return query.getOne();
  }

  /** The caller's earlier run under this idempotency key (keys are unique per attributed user). */
  findByIdempotencyKey(userId: string | null, key: string): Promise<RunEntity | null> {
    return this.rows.findOneBy({ userId: userId ?? IsNull(), idempotencyKey: key });
  }

  pageBySession(scope: DataScope, sessionId: string, request: PageRequest<SessionRunSortField>): Promise<[RunEntity[], number]> {
    return fetchPage(this.withJob(scope).andWhere('run.session_id = :sessionId', { sessionId }), request, {
      sort: 'run.created_at',
      id: 'run.id',
    });
  }

  /** The session's completed runs before `runId`, as turns, oldest first. */
  async history(sessionId: string, runId: string): Promise<Turn[]> {
    const rows: { message: string; content: string }[] = await this.rows.query(
      `SELECT message, content FROM (
         SELECT r.message, r.content, r.created_at FROM runs r, runs current
         WHERE current.id = $2 AND r.session_id = $1 AND r.id <> $2 AND r.status = 'completed' AND r.content IS NOT NULL
           AND r.created_at <= current.created_at
         ORDER BY r.created_at DESC LIMIT ${HISTORY_RUNS}) earlier
       ORDER BY created_at`,
      [sessionId, runId],
    );
    return rows.flatMap((row) => [
      { role: 'user' as const, content: row.message },
      { role: 'assistant' as const, content: row.content },
    ]);
  }

  /** Records a synchronous run's outcome. */
  async finish(id: string, outcome: RunOutcome): Promise<void> {
    const { usage, ...result } = outcome;
    await this.rows.update({ id }, { ...result, ...usageColumns(usage), completedAt: () => 'now()', updatedAt: () => 'now()' });
  }

  /** A background run's outcome, written inside the queue's fenced transaction (see JobResult.record). */
  async recordInQueueTransaction(tx: ClientBase, id: string, outcome: RunOutcome): Promise<void> {
    await tx.query({
      name: 'runs_record_outcome',
      text: `UPDATE runs SET status = $2::varchar, content = $3, error = $4, updated_at = now(),
               completed_at = CASE WHEN $2::varchar IN ('completed', 'failed', 'cancelled') THEN now() ELSE NULL END,
               model = $5, input_tokens = $6, output_tokens = $7
             WHERE id = $1`,
      values: [
        id,
        outcome.status,
        outcome.content,
        outcome.error,
        outcome.usage?.model ?? null,
        outcome.usage?.inputTokens ?? null,
        outcome.usage?.outputTokens ?? null,
      ],
    });
  }

  /** The final state of background runs whose jobs are being deleted past retention, in that transaction. */
  async settleFromExpiredJobs(tx: ClientBase, jobs: readonly ExpiredJob[]): Promise<void> {
    await tx.query({
      text: `UPDATE runs r SET status = e.status, error = e.error, completed_at = e.completed_at, updated_at = now()
             FROM unnest($1::uuid[], $2::varchar[], $3::text[], $4::timestamptz[]) AS e(id, status, error, completed_at)
             WHERE r.id = ANY ($1::uuid[]) AND r.id = e.id
               AND (r.status, r.error, r.completed_at) IS DISTINCT FROM (e.status, e.error, e.completed_at)`,
      values: [jobs.map((job) => job.id), jobs.map((job) => job.status), jobs.map((job) => job.error), jobs.map((job) => job.completedAt)],
    });
  }

  private withJob(scope: DataScope): SelectQueryBuilder<RunEntity> {
    const owner = scope.where('run.user_id');
    return this.rows
      .createQueryBuilder('run')
      .leftJoinAndMapOne('run.job', QueueJobEntity, 'job', 'job.id = run.id')
      .where(owner.sql, owner.params);
  }
}

function usageColumns(usage: ModelUsage | null | undefined): Pick<RunEntity, 'model' | 'inputTokens' | 'outputTokens'> {
  return { model: usage?.model ?? null, inputTokens: usage?.inputTokens ?? null, outputTokens: usage?.outputTokens ?? null };
}

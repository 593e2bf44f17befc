import { hostname } from 'node:os';

import { Injectable, Logger } from '@nestjs/common';
import type { ClientBase } from 'pg';

import { ClaimedJob, ExpiredJob, HandlesJobs, JobContext, JobHandler, JobResult, RecordedResult, RUN_JOB_TYPE } from '@app/queue';
import { RUN_ATTRIBUTES, SPAN, Tracing } from '@app/traces';

import { ComponentKind } from './component';
import { ComponentRegistry } from './component.registry';
import { RunOutcome, RunRepository } from './run.repository';
import { RunExecutor, RunInput } from './run-executor';

/** Executes a background run on a worker; the run's row is written with the job's outcome, under the job's fence. */
@Injectable()
@HandlesJobs(RUN_JOB_TYPE)
export class RunJobHandler implements JobHandler {
  private readonly logger = new Logger(RunJobHandler.name);
  /** Components this worker deferred runs of: warned about once each. */
  private readonly missing = new Set<string>();

  constructor(
    private readonly registry: ComponentRegistry,
    private readonly executor: RunExecutor,
    private readonly runs: RunRepository,
    private readonly tracing: Tracing,
  ) {}

  async handle(job: ClaimedJob, context: JobContext): Promise<JobResult> {
    const component = this.registry.find(job.componentType as ComponentKind, job.componentId);
    if (!component) {
      return this.defer(job);
    }
    const input: RunInput = {
      id: job.id,
      sessionId: job.sessionId,
      userId: job.userId,
      message: String(job.payload.message ?? ''),
      continuesSession: job.payload.continues_session === true,
    };
    // The api's request span, carried on the job: this worker's spans join its trace.
    const trace = this.tracing.runTrace(typeof job.payload.traceparent === 'string' ? job.payload.traceparent : undefined);
    if (typeof job.payload.enqueued_at_ms === 'number') {
      trace
        .start(SPAN.queueWait, {
          startTime: job.payload.enqueued_at_ms,
          attributes: { [RUN_ATTRIBUTES.runId]: input.id, 'job.attempt': job.attempt },
        })
        .end();
    }
    // A run is not repeated after a crash (its attempt budget is 1 by default): nothing runs before its attempt is on record.
    await context.recorded();
    const outcome = await this.executor.execute(component, input, {
      checkpoint: context.checkpoint,
      signal: () => context.signal,
      trace,
    });
    return {
      outcome: outcome.status === 'completed' || outcome.status === 'cancelled' || outcome.status === 'paused' ? outcome.status : 'failed',
      error: outcome.error,
      details: outcome,
    };
  }

  /**
   * A run of a component this worker does not have: the api that accepted it has it, so this worker
   * runs an older or different components module (a rolling update half-way, or a misconfiguration).
   * The job goes back to the queue for a worker that has it, its attempt not spent; said once per component.
   */
  private defer(job: ClaimedJob): JobResult {
    const component = `${job.componentType} '${job.componentId}'`;
    if (!this.missing.has(component)) {
      this.missing.add(component);
      this.logger.warn(
        `This worker has no ${component}: its runs stay queued for a worker that has it. ` +
          'Does this worker load the same COMPONENTS_MODULE as the api?',
      );
    }
    return { outcome: 'deferred', error: `Waiting for a worker that has ${component}: the worker on ${hostname()} has none` };
  }

  /** The runs' content, usage and spans, in the queue's fenced transaction: one statement per batch of finished jobs. */
  record(tx: ClientBase, results: readonly RecordedResult[]): Promise<void> {
    return this.runs.recordOutcomes(
      tx,
      results.map(({ id, details }) => ({ id, outcome: details as RunOutcome })),
    );
  }

  /** A run whose job ended without the handler writing it (swept, cancelled at claim) keeps the job's final state. */
  expire(tx: ClientBase, jobs: readonly ExpiredJob[]): Promise<void> {
    return this.runs.settleFromExpiredJobs(tx, jobs);
  }
}

import { SetMetadata } from '@nestjs/common';
import type { ClientBase } from 'pg';

import type { JobPayload } from '../job.entity';

/**
 * What the queue engine needs of anything it holds, a job or a schedule fire: the fence of every
 * write it makes is (id, attempt, this worker).
 */
export interface HeldWork {
  id: string;
  jobType: string;
  attempt: number;
  maxAttempts: number;
  /**
   * The attempt is spent and the job is `running`. False for a job claimed ahead of a free slot:
   * reserved for this worker, still `queued`, and started (attempt spent) only when a slot frees.
   */
  started: boolean;
  /** A live cancellation intent existed when the job was claimed: the worker treats that as its first checkpoint. */
  cancelRequested: boolean;
}

/** A job of queue_jobs as a worker holds it. */
export interface ClaimedJob extends HeldWork {
  componentType: string;
  componentId: string;
  sessionId: string;
  userId: string | null;
  payload: JobPayload;
}

export interface JobContext {
  /** Aborted when the worker lost the job (swept, requeued) or is shutting down past its deadline. */
  readonly signal: AbortSignal;
  /** A cooperative cancellation point: throws JobStopped when the job must stop now. */
  checkpoint(): Promise<void>;
  /**
   * Settles once this attempt's start is on record. A job taken from the prefetch buffer begins at once
   * and its start is written meanwhile, so a worker killed in between gives the job back with its
   * attempt unspent, to run again. A handler whose work must not happen twice awaits this before acting
   * (checkpoint() does too). Throws JobStopped when the job must not go on: it was cancelled, or handed
   * back to the queue before its start was written.
   */
  recorded(): Promise<void>;
}

/**
 * `deferred`: this worker cannot run the job (an api and a worker mid-way through a rolling update,
 * with different components): it goes back to the queue for another worker, its attempt not spent.
 */
export type JobOutcome = 'completed' | 'failed' | 'cancelled' | 'paused' | 'deferred';

export interface JobResult {
  outcome: JobOutcome;
  /** The attempt's error (failed, cancelled), or why it was deferred; null when it succeeded. */
  error?: string | null;
  /** What the handler keeps in its own records about this attempt (a run's content): handed to its record(). */
  details?: unknown;
}

/** One attempt's details, for JobHandler.record. */
export interface RecordedResult {
  id: string;
  details: unknown;
}

/** A terminal job deleted past QUEUE_RETENTION_SECONDS, with the state it ended in. */
export interface ExpiredJob {
  id: string;
  status: 'completed' | 'failed' | 'cancelled';
  error: string | null;
  completedAt: Date | null;
}

/** Runs one job type. Boot fails when a job type has no handler or two. */
export interface JobHandler<Work extends HeldWork = ClaimedJob> {
  handle(job: Work, context: JobContext): Promise<JobResult>;
  /**
   * Writes that belong with the outcomes (a run's content), for a batch of attempts that returned
   * details: inside the transaction that records the outcomes, and only for the attempts whose
   * fence held, so a lost worker's late result never lands.
   */
  record?(tx: ClientBase, results: readonly RecordedResult[]): Promise<void>;
  /**
   * Jobs of this type being deleted past retention, inside the deleting transaction: the place to
   * keep their final state in the handler's own records, since the job was its authority until now.
   */
  expire?(tx: ClientBase, jobs: readonly ExpiredJob[]): Promise<void>;
}

/** Thrown by JobContext.checkpoint. */
export class JobStopped extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'JobStopped';
  }
}

export const JOB_HANDLER = 'queue:job-handler';

/** Marks a provider as the handler of one job type; the worker finds it at boot. */
export function HandlesJobs(jobType: string): ClassDecorator {
  return SetMetadata(JOB_HANDLER, jobType);
}

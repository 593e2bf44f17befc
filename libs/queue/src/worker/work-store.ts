import type { ClientBase, Pool } from 'pg';

import { HeldWork, JobOutcome } from './job-handler';

/** One finished attempt, fenced by (id, attempt) and the worker that holds it. */
export interface FinishedAttempt {
  id: string;
  jobType: string;
  attempt: number;
  outcome: JobOutcome;
  error: string | null;
  /** What the handler keeps about the attempt in its own records (JobResult.details). */
  details?: unknown;
  /**
   * The attempt's start was not written yet: the item is still reserved for this worker, at `attempt - 1`,
   * and this write starts and finishes it at once.
   */
  reserved?: boolean;
}

export interface RecordedState {
  id: string;
  status: string;
}

export interface HeldJob {
  id: string;
  attempt: number;
}

export interface StartedAttempt {
  attempt: number;
  cancelRequested: boolean;
}

/** `started`: a running item swept (its attempt spent); otherwise a reservation handed back to the queue. */
export interface SweptWork {
  id: string;
  status: string;
  error: string | null;
  started: boolean;
}

export interface ExpiredRow {
  id: string;
  job_type: string;
  status: 'completed' | 'failed' | 'cancelled';
  error: string | null;
  completed_at: Date | null;
}

/**
 * The SQL side of the queue engine for one table. The engine (QueueWorker) owns everything else:
 * slots, the prefetch buffer, batched starts and outcomes, heartbeat and sweep timers, the shutdown
 * deadline. Every write is fenced by (id, attempt, workerId).
 */
export interface WorkStore<Work extends HeldWork> {
  readonly workerId: string;
  /** NOTIFY channel that announces claimable work. */
  readonly readyChannel: string;
  /** Claims up to `limit`; the first `startNow` start at once, the rest are reserved (see HeldWork.started). */
  claim(limit: number, startNow: number, jobTypes: string[]): Promise<Work[]>;
  /** Starts reserved items in one statement; returns those still held, with the attempt they now run. */
  start(held: readonly HeldJob[]): Promise<Map<string, StartedAttempt>>;
  /** Records many outcomes in one statement; fence-rejected attempts are absent from the result. */
  finish(attempts: readonly FinishedAttempt[], client?: ClientBase | Pool): Promise<RecordedState[]>;
  /** Renews the locks of the items still held; returns their ids. */
  heartbeat(held: readonly HeldJob[]): Promise<Set<string>>;
  /**
   * Items whose worker has not heartbeated for longer than the grace, except the `held` ones this worker holds
   * (alive, it renews them itself; a lock it holds looks stale only after the database was away): suspects.
   */
  stale(lockGraceSeconds: number, held: readonly string[]): Promise<string[]>;
  /** Settles those of the `suspects` (an earlier `stale`) that are stale still. */
  sweep(lockGraceSeconds: number, held: readonly string[], suspects: readonly string[]): Promise<SweptWork[]>;
  /** Hands items back at shutdown; returns the ids handed back (their late outcomes are then fenced out). */
  release(held: readonly HeldJob[]): Promise<string[]>;
  /** A live cancellation request for the item (checked at each checkpoint). */
  cancellationRequested(id: string): Promise<boolean>;
  /** Periodic bookkeeping (folding the counts its table's triggers keep), every second. */
  maintain?(): Promise<void>;
  /**
   * Deletes terminal items past retention, a batch per transaction; `settle` gets each batch inside
   * its transaction. Returns how many went.
   */
  deleteExpired?(retentionSeconds: number, settle: (tx: ClientBase, rows: ExpiredRow[]) => Promise<void>): Promise<number>;
}

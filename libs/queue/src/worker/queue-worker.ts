import { setImmediate as setImmediatePromise, setTimeout as sleep } from 'node:timers/promises';

import type { Client, ClientBase, Pool } from 'pg';
import type { Logger } from 'pino';

import { inTransaction, isDatabaseUnavailable } from '@app/database';
import { storableText } from '@app/validation';

import { ClaimedJob, HeldWork, JobContext, JobHandler, JobResult, JobStopped } from './job-handler';
import { QueueWorkerMetrics } from './queue-worker-metrics';
import { ExpiredRow, FinishedAttempt, HeldJob, RecordedState, StartedAttempt, WorkStore } from './work-store';

export interface QueueWorkerOptions<Work extends HeldWork = ClaimedJob> {
  pool: Pool;
  /** The table's SQL: queue_jobs (JobStore) or schedule fires. */
  store: WorkStore<Work>;
  /** Opens the dedicated connection that LISTENs for new work. */
  connectListener: () => Promise<Client>;
  handlers: ReadonlyMap<string, JobHandler<Work>>;
  concurrency: number;
  /**
   * Jobs claimed ahead of a free slot (like graphile-worker's local queue): fewer, larger claims; null
   * (or 0 jobs) claims only for free slots. Such a job stays `queued`, reserved for this worker, and
   * spends no attempt until it starts; handed back at a graceful stop, and swept back to the queue
   * untouched after a crash.
   */
  prefetch: {
    /** At most this many held ahead. */
    jobs: number;
    /**
     * How far ahead: only the jobs the slots are expected to start within this long, at the pace jobs
     * have run here. Short enough that a reserved job never waits long while another worker idles (the
     * surplus is handed back when jobs turn slower); long enough to cover many claims' round trips.
     */
    horizonMs: number;
  } | null;
  /**
   * Without prefetch: while anything runs, claim only once this many slots are free (default 1), so
   * a store whose claim is a transaction of several statements makes fewer, larger ones.
   */
  claimAtLeast?: number;
  pollIntervalMs: number;
  lockGraceSeconds: number;
  /** 0: the store keeps its finished items. */
  retentionSeconds: number;
  logger: Logger;
  /** The job queue's figures on the worker's /metrics; none for schedule fires, which count their own. */
  metrics?: QueueWorkerMetrics;
  /** Told when the LISTEN connection comes up (true) or is lost (false: the engine polls until it is back). */
  onListening?: (listening: boolean) => void;
}

/** The record of an attempt started by its claim. */
const ON_RECORD = Promise.resolve();

/** An attempt's outcome and the record its write waits for (none when the write starts the attempt too). */
type PendingOutcome = FinishedAttempt & { recorded: Promise<void> };

/** One running attempt. Its AbortSignal is made on first use: most handlers only call checkpoint(). */
class Execution<Work extends HeldWork> {
  done: Promise<void> = Promise.resolve();
  /** When its handler began, on the performance clock. */
  readonly began = performance.now();
  /** Settles once the attempt's start is on record; rejects with JobStopped when it never will be. */
  readonly recorded: Promise<void>;
  private record: PromiseWithResolvers<void> | null = null;
  private startRefused = false;
  private stopReason: string | null = null;
  private controller: AbortController | null = null;

  /** `onRecord`: false for a job begun from the prefetch buffer, whose start is written meanwhile. */
  constructor(
    readonly job: Work,
    onRecord: boolean,
  ) {
    if (onRecord) {
      this.recorded = ON_RECORD;
    } else {
      this.record = Promise.withResolvers<void>();
      this.recorded = this.record.promise;
      // Awaited by the outcome's write and by the handler's checkpoints, if at all.
      this.recorded.catch(() => undefined);
    }
  }

  /** The attempt's start is on record: false while it is written (the row's lock and attempt in flux), and when refused. */
  get onRecord(): boolean {
    return this.record === null && !this.startRefused;
  }

  /** The start statement answered: the attempt is on record, or, with the reason, it never will be. */
  startRecorded(notStarted?: string): void {
    if (notStarted === undefined) {
      this.record?.resolve();
    } else {
      this.startRefused = true;
      this.stop(notStarted);
      this.record?.reject(new JobStopped(notStarted));
    }
    this.record = null;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopReason !== null) {
        this.controller.abort(this.stopReason);
      }
    }
    return this.controller.signal;
  }

  /** Why the attempt must stop (lost lock, shutdown), or null while it may go on. */
  get stopped(): string | null {
    return this.stopReason;
  }

  stop(reason: string): void {
    this.stopReason ??= reason;
    this.controller?.abort(reason);
  }
}

const RETENTION_INTERVAL_MS = 10 * 60_000;
const LISTEN_BACKOFF_MAX_MS = 30_000;
/** How often the store's bookkeeping runs (the queue folds its count deltas: at 10,000 jobs/s a second leaves a few thousand rows to sum). */
const MAINTAIN_INTERVAL_MS = 1000;

/**
 * How often a lock (a job's, a fire's, a run's lease) is renewed, and lost ones swept: a third of the grace,
 * so two renewals can be late before a lock counts as lost (a grace of 1 s renews every 333 ms).
 */
export function heartbeatPeriodMs(lockGraceSeconds: number): number {
  return Math.max(250, (lockGraceSeconds * 1000) / 3);
}

/**
 * The queue engine of one worker process, for one table (queue jobs, or schedule fires): claims up
 * to `concurrency` items and what it holds ahead, in batches (woken by NOTIFY or wake(), else every
 * poll interval), runs them, records starts and outcomes in batches, heartbeats its locks, sweeps
 * other workers' stale locks, and on stop() drains until the deadline, then releases what is left.
 */
export class QueueWorker<Work extends HeldWork = ClaimedJob> {
  private readonly store: WorkStore<Work>;
  private readonly log: Logger;
  private readonly executions = new Map<string, Execution<Work>>();
  /** How long this worker's handlers have taken, a moving average in ms (null until one has returned). */
  private meanJobMs: number | null = null;
  /** Reserved jobs (claimed ahead, not started), oldest first. */
  private readonly buffer: Work[] = [];
  /** Jobs begun from the buffer, still running, whose start has not gone out yet, with the reservation each starts. */
  private readonly unsent = new Map<Execution<Work>, Work>();
  private startWrite: Promise<void> | null = null;
  private readonly outcomes: PendingOutcome[] = [];
  /** Jobs this worker handed back at shutdown: their handlers' late outcomes are expected to be fenced out. */
  private readonly releasedAtShutdown = new Set<string>();
  private flushing: Promise<void> | null = null;
  private timers: NodeJS.Timeout[] = [];
  private listener: Client | null = null;
  private loop: Promise<void> | null = null;
  private stopping = false;
  /** While stopping: when the drain's deadline passes (epoch ms). */
  private stopDeadline = Infinity;
  private notified = false;
  private wake: (() => void) | null = null;
  private listenFailures = 0;
  /** Whether this worker's last database call failed for want of the database. */
  private away = false;
  /** When the database last answered a claim, sweep or heartbeat (ms since the epoch). */
  private lastAnswerAt = Date.now();
  /** No sweep before this (ms since the epoch): see databaseAnswered. */
  private sweepsHeldUntil = 0;
  /** Jobs whose locks looked stale at the sweep's last look, and when that answer came (see sweep). */
  private suspects: { ids: string[]; seenAt: number } | null = null;
  private sweeping = false;
  /** The claim and sweep statements still waiting for an answer, by when they were sent. */
  private readonly waiting = new Set<{ since: number }>();

  constructor(private readonly options: QueueWorkerOptions<Work>) {
    this.store = options.store;
    this.log = options.logger.child({ worker: options.store.workerId });
    // An idle connection that drops (database restart, network cut) must not take the process down:
    // the next query reconnects, and claim/heartbeat failures are logged and retried.
    options.pool.on('error', (error) => this.log.warn({ err: error }, 'idle database connection lost'));
  }

  async start(): Promise<void> {
    await this.listen();
    const lockPeriodMs = heartbeatPeriodMs(this.options.lockGraceSeconds);
    this.timers.push(setInterval(() => void this.heartbeat(), lockPeriodMs));
    this.timers.push(setInterval(() => void this.sweep(), lockPeriodMs));
    if (this.store.maintain) {
      this.timers.push(setInterval(() => void this.maintain(), MAINTAIN_INTERVAL_MS));
    }
    if (this.options.retentionSeconds > 0 && this.store.deleteExpired) {
      // At start too: a worker redeployed more often than the interval would otherwise never clean up.
      void this.deleteExpired();
      this.timers.push(setInterval(() => void this.deleteExpired(), RETENTION_INTERVAL_MS));
    }
    this.loop = this.claimLoop();
    this.log.info(
      { concurrency: this.options.concurrency, prefetch: this.options.prefetch?.jobs ?? 0, job_types: [...this.options.handlers.keys()] },
      'queue worker started',
    );
  }

  /** Stops claiming, lets running jobs finish until the deadline, then releases the rest (attempt given back). */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.stopDeadline = Date.now() + timeoutMs;
    this.wakeUp();
    await this.loop;
    while (this.startWrite) {
      await this.startWrite;
    }
    await this.releaseBuffered();
    const drained = await Promise.race([this.allDone().then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!drained) {
      await this.releaseUnfinished();
    }
    await this.flushAll();
    this.timers.forEach(clearInterval);
    await this.listener?.end().catch(() => undefined);
    this.log.info({ drained }, 'queue worker stopped');
  }

  private async claimLoop(): Promise<void> {
    const jobTypes = [...this.options.handlers.keys()];
    while (!this.stopping) {
      const prefetch = this.prefetchNow();
      const capacity = this.options.concurrency + prefetch;
      // With a prefetch buffer, refill only once half of it is free, so claims stay large.
      const refillAt = prefetch === 0 ? (this.options.claimAtLeast ?? 1) : Math.ceil(capacity / 2);
      const held = this.executions.size + this.buffer.length;
      const room = capacity - held;
      if (room === 0 || (room < refillAt && held > 0)) {
        await this.idle(null);
        continue;
      }
      this.notified = false;
      let claimed: Work[] = [];
      try {
        const startNow = Math.max(0, this.options.concurrency - held);
        claimed = await this.answered(this.store.claim(room, startNow, jobTypes));
        this.options.metrics?.claims.inc({ result: 'ok' });
        this.options.metrics?.claimed.inc(claimed.length);
      } catch (error) {
        this.options.metrics?.claims.inc({ result: 'error' });
        this.failed(error, 'claim failed; retrying after the poll interval');
      }
      for (const job of claimed) {
        if (job.started) {
          this.begin(job);
        } else {
          this.buffer.push(job);
        }
      }
      this.startBuffered();
      // A short batch means the queue looked empty: wait for NOTIFY, a free slot or the poll (not when a stop
      // came during the claim: its wake-up found no wait to end).
      if (claimed.length < room && !this.notified && !this.stopping) {
        await this.idle(this.options.pollIntervalMs);
      }
    }
  }

  /** The jobs to hold ahead: as many as the slots start within the prefetch horizon at the pace seen so far. */
  private prefetchNow(): number {
    const { prefetch } = this.options;
    if (!prefetch || prefetch.jobs === 0 || this.meanJobMs === null) {
      return 0;
    }
    return Math.min(prefetch.jobs, Math.floor((this.options.concurrency * prefetch.horizonMs) / Math.max(this.paceMs(), 0.001)));
  }

  /**
   * How long a job takes here, as far as this worker can tell: the mean of the jobs that ran their course, or,
   * while every slot has held one for over a heartbeat period, the youngest one's age. Slow or hung handlers free
   * no slot, and jobs held ahead for them would wait while other workers idle: the next heartbeat hands them
   * back. (A shorter wait is the ordinary spread of job times.)
   */
  private paceMs(): number {
    if (this.executions.size < this.options.concurrency) {
      return this.meanJobMs!;
    }
    const now = performance.now();
    const youngest = Math.min(...[...this.executions.values()].map((execution) => now - execution.began));
    return youngest > heartbeatPeriodMs(this.options.lockGraceSeconds) ? Math.max(this.meanJobMs!, youngest) : this.meanJobMs!;
  }

  private freeSlots(): number {
    return this.options.concurrency - this.executions.size;
  }

  /**
   * Gives free slots to reserved jobs. Each begins at once: its start (the attempt spent) goes out with
   * the next start statement, one for every job begun while the previous one was written, so a slot
   * never waits a round trip for its job, however short the jobs. A job that finishes before its start
   * goes out is started by its outcome's write instead; any other's outcome is written once its start
   * is on record. A handler that must not act twice awaits that first (JobContext.recorded).
   */
  private startBuffered(): void {
    while (!this.stopping && this.freeSlots() > 0 && this.buffer.length > 0) {
      const reserved = this.buffer.shift()!;
      this.unsent.set(this.begin({ ...reserved, attempt: reserved.attempt + 1, started: true }, false), reserved);
    }
    if (this.unsent.size > 0) {
      this.startWrite ??= this.recordStarts().finally(() => {
        this.startWrite = null;
        // A job begun as the last statement answered waits for the next.
        if (this.unsent.size > 0) {
          this.startBuffered();
        }
      });
    }
  }

  /**
   * Writes the starts of the jobs begun from the buffer, a statement at a time, each with every job
   * begun since the last. A job cancelled or handed back meanwhile is stopped and writes no outcome;
   * so is every job of a statement that failed, and its reservation is handed back at once.
   */
  private async recordStarts(): Promise<void> {
    await setImmediatePromise();
    for (;;) {
      if (this.unsent.size === 0) {
        return;
      }
      const batch = [...this.unsent].map(([execution, reserved]) => ({ execution, reserved }));
      this.unsent.clear();
      let started: Map<string, StartedAttempt>;
      try {
        started = await this.startWithRetry(batch.map(({ reserved }) => reserved));
      } catch (error) {
        const reason = `The job's start could not be recorded: ${error instanceof Error ? error.message : String(error)}`;
        this.log.error({ err: error, jobs: batch.length }, 'recording job starts failed; stopping the jobs and handing them back');
        batch.forEach(({ execution }) => execution.startRecorded(reason));
        // The statement may have landed unanswered: the release is fenced on either attempt (still reserved, or started).
        const attempts = batch.flatMap(({ reserved }) => [reserved, { ...reserved, attempt: reserved.attempt + 1 }]);
        await this.handBack(attempts, 'jobs whose start could not be recorded');
        continue;
      }
      for (const { reserved, execution } of batch) {
        const attempt = started.get(reserved.id);
        if (!attempt) {
          this.log.info(
            { job_id: reserved.id },
            'reserved job stopped as it began: it was cancelled or handed back to the queue meanwhile',
          );
          execution.startRecorded('The job was cancelled or handed back to the queue before its start was recorded');
        } else {
          if (attempt.cancelRequested) {
            execution.stop('Run was cancelled');
          }
          execution.startRecorded();
        }
      }
    }
  }

  /** One start statement, tried again (it is idempotent) while the database is unreachable and the worker is not stopping. */
  private async startWithRetry(reserved: readonly Work[]): Promise<Map<string, StartedAttempt>> {
    for (;;) {
      try {
        return await this.store.start(reserved);
      } catch (error) {
        if (!(await this.waitForDatabase(error, reserved.length, 'job starts'))) {
          throw error;
        }
      }
    }
  }

  /** Runs a started job; `onRecord` is false for one begun from the buffer whose start is still being written. */
  private begin(job: Work, onRecord = true): Execution<Work> {
    const execution = new Execution(job, onRecord);
    this.log.info(
      { job_id: job.id, job_type: job.jobType, attempt: job.attempt, max_attempts: job.maxAttempts, status: 'running' },
      'job running',
    );
    const { metrics } = this.options;
    const endTimer = metrics?.duration.startTimer({ job_type: job.jobType });
    metrics?.running.inc();
    execution.done = this.execute(execution).then((result) => {
      // The pace of jobs that ran their course: a deferral, or a job cancelled or stopped, says nothing of it.
      if (result.outcome !== 'deferred' && !job.cancelRequested && execution.stopped === null) {
        const tookMs = performance.now() - execution.began;
        this.meanJobMs = this.meanJobMs === null ? tookMs : this.meanJobMs + (tookMs - this.meanJobMs) / 8;
      }
      endTimer?.({ outcome: result.outcome });
      metrics?.running.dec();
      this.settle(execution, result);
    });
    this.executions.set(job.id, execution);
    return execution;
  }

  private async execute(execution: Execution<Work>): Promise<JobResult> {
    const { job } = execution;
    if (job.cancelRequested) {
      // The claim saw a live cancellation intent: that is the attempt's first checkpoint.
      return { outcome: 'cancelled', error: 'Run was cancelled' };
    }
    const recorded = async (): Promise<void> => {
      await execution.recorded;
      if (execution.stopped !== null) {
        throw new JobStopped(execution.stopped);
      }
    };
    const context: JobContext = {
      get signal() {
        return execution.signal;
      },
      recorded,
      checkpoint: async () => {
        await recorded();
        if (await this.store.cancellationRequested(job.id)) {
          throw new JobStopped('Run was cancelled');
        }
      },
    };
    try {
      return await this.options.handlers.get(job.jobType)!.handle(job, context);
    } catch (error) {
      if (error instanceof JobStopped) {
        return { outcome: 'cancelled', error: error.message };
      }
      // A handler's own failure, as text PostgreSQL can store (one NUL would fail the whole batch of outcomes).
      return { outcome: 'failed', error: storableText(error instanceof Error ? error.message : String(error)) };
    }
  }

  /** The slot frees as soon as the handler returns; the outcome joins the next batched write. */
  private settle(execution: Execution<Work>, result: JobResult): void {
    const { job } = execution;
    // Finished before its start went out: this write starts it too, one write where there were two.
    const reserved = this.unsent.delete(execution);
    if (this.executions.get(job.id) === execution) {
      this.executions.delete(job.id);
    }
    this.startBuffered();
    this.wakeUp();
    this.outcomes.push({
      id: job.id,
      jobType: job.jobType,
      attempt: job.attempt,
      outcome: result.outcome,
      error: result.error ?? null,
      details: result.details,
      reserved,
      recorded: reserved ? ON_RECORD : execution.recorded,
    });
    void this.flush();
  }

  /**
   * A write that failed because the database is unreachable is kept and tried again after the
   * poll interval (every write is fenced, so a late one cannot overwrite a sweep or requeue);
   * true when the caller should retry. A stopping worker keeps trying until its drain's deadline (a blip
   * must not cost jobs that finished their outcomes); past it nothing waits: the sweeper settles what is left.
   */
  private async waitForDatabase(error: unknown, jobs: number, what: string): Promise<boolean> {
    if (!isDatabaseUnavailable(error) || Date.now() >= this.stopDeadline) {
      return false;
    }
    // Said at warn once per outage (with noteIfUnavailable's line), each retry after it at debug.
    this.log[this.away ? 'debug' : 'warn']({ err: error, jobs }, `database unavailable: keeping ${what} to write when it is back`);
    this.noteIfUnavailable(error);
    await sleep(this.options.pollIntervalMs);
    return true;
  }

  /**
   * One batch of outcomes. When handlers keep records of their own (a run's content), those are
   * written in the same transaction, for the attempts whose fence held only: a lost worker's late
   * result never lands. Either way one statement per kind of write, whatever the batch size.
   */
  private async write(batch: readonly FinishedAttempt[]): Promise<RecordedState[]> {
    const recorded = [...this.options.handlers].filter(
      ([jobType, handler]) => handler.record && batch.some((attempt) => attempt.jobType === jobType && attempt.details !== undefined),
    );
    if (recorded.length === 0) {
      return this.store.finish(batch);
    }
    return inTransaction(this.options.pool, async (client) => {
      const written = await this.store.finish(batch, client);
      const held = new Set(written.map((row) => row.id));
      for (const [jobType, handler] of recorded) {
        const results = batch.filter((attempt) => attempt.jobType === jobType && attempt.details !== undefined && held.has(attempt.id));
        if (results.length > 0) {
          await handler.record!(
            client,
            results.map((attempt) => ({ id: attempt.id, details: attempt.details })),
          );
        }
      }
      return written;
    });
  }

  /**
   * Writes pending outcomes in batches: the first caller waits one turn of the event loop so that
   * every job finished in that turn shares one statement; callers meanwhile share that write.
   */
  private flush(): Promise<void> {
    this.flushing ??= (async () => {
      await setImmediatePromise();
      while (this.outcomes.length > 0) {
        const batch = await this.startedOnRecord(this.outcomes.splice(0));
        if (batch.length === 0) {
          continue;
        }
        try {
          this.logWritten(batch, await this.write(batch));
        } catch (error) {
          if (await this.waitForDatabase(error, batch.length, 'job outcomes')) {
            this.outcomes.unshift(...batch);
            continue;
          }
          const failure = { err: error, jobs: batch.length, job_ids: batch.slice(0, 100).map((attempt) => attempt.id) };
          if (isDatabaseUnavailable(error)) {
            // Only a stopping worker stops waiting for the database: its drain's deadline has passed.
            this.log.error(
              failure,
              `database still unreachable at the drain's deadline: ${batch.length} job outcome(s) given up. Their locks lapse ` +
                `after QUEUE_LOCK_GRACE_SECONDS, then another worker's sweep retries or fails those jobs`,
            );
          } else {
            this.log.error(failure, 'recording outcomes failed; the sweeper will settle these jobs');
          }
        }
      }
    })().finally(() => {
      this.flushing = null;
      // Outcomes pushed while this write was finishing go out with the next one.
      if (this.outcomes.length > 0) {
        void this.flush();
      }
    });
    return this.flushing;
  }

  /**
   * The outcomes to write: those whose start is on record, and those this write starts (`reserved`). A job
   * whose start never was written (see recordStarts) writes nothing.
   */
  private async startedOnRecord(batch: PendingOutcome[]): Promise<PendingOutcome[]> {
    const records = await Promise.allSettled(batch.map((outcome) => outcome.recorded));
    return batch.filter((_, index) => records[index].status === 'fulfilled');
  }

  private async flushAll(): Promise<void> {
    while (this.outcomes.length > 0 || this.flushing) {
      await (this.flushing ?? this.flush());
    }
  }

  private logWritten(batch: readonly FinishedAttempt[], written: readonly { id: string; status: string }[]): void {
    const statuses = new Map(written.map((row) => [row.id, row.status]));
    for (const attempt of batch) {
      const status = statuses.get(attempt.id);
      if (status === undefined && attempt.reserved) {
        this.log.info({ job_id: attempt.id }, 'reserved job not started: it was cancelled or handed back to the queue meanwhile');
      } else if (status === undefined) {
        // A job this worker released itself: its handler's late outcome is fenced out by design.
        this.log[this.releasedAtShutdown.has(attempt.id) ? 'debug' : 'warn'](
          { job_id: attempt.id, attempt: attempt.attempt, outcome: attempt.outcome },
          'job write rejected by the fence: the job was swept, requeued or released meanwhile',
        );
      } else {
        // A deferral is the handler's to explain (once, not per job): here it is routine.
        this.log[attempt.outcome === 'deferred' ? 'debug' : 'info'](
          { job_id: attempt.id, attempt: attempt.attempt, status, ...(attempt.error ? { error: attempt.error } : {}) },
          attempt.outcome === 'deferred' ? 'job deferred: back in the queue for another worker' : `job ${status}`,
        );
      }
    }
  }

  /**
   * How long the oldest claim or sweep has waited for the database, in ms (0: none waits). A sweep runs
   * every heartbeat period whatever the engine holds, so a database that stopped answering shows here.
   */
  stalledMs(): number {
    let oldest = Infinity;
    for (const { since } of this.waiting) {
      oldest = Math.min(oldest, since);
    }
    return oldest === Infinity ? 0 : Date.now() - oldest;
  }

  private async answered<T>(statement: Promise<T>): Promise<T> {
    const entry = { since: Date.now() };
    this.waiting.add(entry);
    try {
      const answer = await statement;
      this.databaseAnswered();
      return answer;
    } catch (error) {
      this.noteIfUnavailable(error);
      throw error;
    } finally {
      this.waiting.delete(entry);
    }
  }

  private noteIfUnavailable(error: unknown): void {
    if (isDatabaseUnavailable(error)) {
      if (!this.away) {
        this.log.error(
          { err: error },
          'database unreachable: claims, heartbeats and sweeps are retried until it answers (each failure at debug)',
        );
      }
      this.away = true;
    }
  }

  /**
   * A periodic call failed. For want of the database it is said once per outage (noteIfUnavailable) and each
   * retry only at debug: an outage of a minute otherwise wrote hundreds of error lines with their stacks.
   */
  private failed(error: unknown, message: string): void {
    if (isDatabaseUnavailable(error)) {
      this.noteIfUnavailable(error);
      this.log.debug({ err: error }, message);
    } else {
      this.log.error({ err: error }, message);
    }
  }

  /**
   * Back from an outage long enough to miss a heartbeat, every live worker's locks may look stale: this one
   * renews its own at once, and sweeps only a heartbeat period later, by when the others have renewed theirs
   * (they poll as often). The outage is counted from the last answer before it, not from the first failure
   * noticed (which can come late, or just before the database returns). Only a silence that lasted holds
   * sweeps, and only for a period, so a database that fails now and then delays a dead worker's sweep, never
   * prevents it.
   */
  private databaseAnswered(): void {
    const silentMs = Date.now() - this.lastAnswerAt;
    this.lastAnswerAt = Date.now();
    if (!this.away) {
      return;
    }
    this.away = false;
    this.log.warn(`database answered again after ${(silentMs / 1000).toFixed(1)} s without an answer`);
    const periodMs = heartbeatPeriodMs(this.options.lockGraceSeconds);
    if (silentMs >= periodMs) {
      this.sweepsHeldUntil = Date.now() + periodMs;
      void this.heartbeat();
    }
  }

  private async heartbeat(): Promise<void> {
    await this.trimBuffer();
    // A job whose start is being written is left out (its attempt is in flux): the start, once written, renews its lock.
    const running = [...this.executions.values()].filter((execution) => execution.onRecord);
    const held = [...running.map(({ job }) => job), ...this.buffer];
    if (held.length === 0) {
      return;
    }
    try {
      const still = await this.store.heartbeat(held);
      this.databaseAnswered();
      this.options.metrics?.heartbeats.inc({ result: 'ok' });
      for (const execution of running) {
        const { job } = execution;
        if (!still.has(job.id) && this.executions.get(job.id) === execution) {
          this.log.warn(
            { job_id: job.id, attempt: job.attempt },
            'job lost: its lock was swept or requeued; stopping it at the next checkpoint',
          );
          execution.stop('Worker lost the job (swept or requeued)');
          this.options.metrics?.lost.inc();
        }
      }
      const lostAhead = this.buffer.filter((job) => !still.has(job.id) && held.includes(job));
      lostAhead.forEach((job) => this.buffer.splice(this.buffer.indexOf(job), 1));
    } catch (error) {
      this.options.metrics?.heartbeats.inc({ result: 'error' });
      this.failed(error, 'heartbeat failed');
    }
  }

  /** Jobs held ahead beyond what the slots now start within the horizon (the jobs got slower) go back to the queue. */
  private async trimBuffer(): Promise<void> {
    const excess = this.buffer.length - this.prefetchNow();
    if (excess <= 0 || this.stopping) {
      return;
    }
    // Not kept if the release fails: it may have landed unanswered.
    const released = await this.handBack(this.buffer.splice(-excess), 'jobs held ahead');
    if (released.size > 0) {
      this.log.info({ jobs: released.size }, 'handed back jobs held ahead: this worker now runs them more slowly than it claimed them');
    }
  }

  /**
   * Takes the jobs of workers that stopped heartbeating, in two looks: a job stale at one look is swept at a later
   * one, half a heartbeat period after the first answered, if it is stale still. A database that hangs without
   * refusing (frozen, or a partition dropping packets) runs the look sent before the hang when it ends, against
   * heartbeats nobody could write: every live worker's jobs look lost then. Their heartbeats, pending as well, land
   * at once, so the second look finds only the dead. Held while the database is away and just after (databaseAnswered).
   */
  private async sweep(): Promise<void> {
    const suspects = this.suspects;
    const confirmAfterMs = heartbeatPeriodMs(this.options.lockGraceSeconds) / 2;
    if (this.sweeping || this.away || Date.now() < this.sweepsHeldUntil || (suspects && Date.now() - suspects.seenAt < confirmAfterMs)) {
      return;
    }
    const { metrics } = this.options;
    const held = [...this.executions.keys(), ...this.buffer.map((job) => job.id)];
    this.sweeping = true;
    this.suspects = null;
    try {
      const swept = suspects ? await this.answered(this.store.sweep(this.options.lockGraceSeconds, held, suspects.ids)) : [];
      const stale = await this.answered(this.store.stale(this.options.lockGraceSeconds, held));
      this.suspects = stale.length > 0 ? { ids: stale, seenAt: Date.now() } : null;
      metrics?.sweeps.inc({ result: 'ok' });
      for (const job of swept) {
        metrics?.swept.inc({ status: job.status });
        if (job.started) {
          this.log.warn({ job_id: job.id, status: job.status, error: job.error }, `job swept to ${job.status}`);
        } else {
          this.log.warn(
            { job_id: job.id, status: job.status },
            'reserved job handed back to the queue: its worker was lost before starting it',
          );
        }
      }
    } catch (error) {
      metrics?.sweeps.inc({ result: 'error' });
      this.failed(error, 'sweep failed');
    } finally {
      this.sweeping = false;
    }
  }

  private async maintain(): Promise<void> {
    try {
      await this.store.maintain?.();
    } catch (error) {
      this.failed(error, 'queue bookkeeping (folding kept counts) failed; retrying in a second');
    }
  }

  private async deleteExpired(): Promise<void> {
    try {
      const deleted = (await this.store.deleteExpired?.(this.options.retentionSeconds, (tx, rows) => this.expire(tx, rows))) ?? 0;
      if (deleted > 0) {
        this.log.info({ deleted }, 'deleted terminal jobs past retention');
      }
    } catch (error) {
      this.failed(error, 'retention cleanup failed');
    }
  }

  /** Hands each job type's expired jobs to its handler's expire hook, in the deleting transaction. */
  private async expire(tx: ClientBase, rows: readonly ExpiredRow[]): Promise<void> {
    for (const [jobType, handler] of this.options.handlers) {
      const jobs = rows
        .filter((row) => row.job_type === jobType)
        .map((row) => ({ id: row.id, status: row.status, error: row.error, completedAt: row.completed_at }));
      if (handler.expire && jobs.length > 0) {
        await handler.expire(tx, jobs);
      }
    }
  }

  /** Reserved jobs never started: they go back to the queue at once, as they were. */
  private async releaseBuffered(): Promise<void> {
    const ahead = this.buffer.splice(0);
    const released = await this.handBack(ahead, 'reserved jobs');
    ahead
      .filter((job) => released.has(job.id))
      .forEach((job) =>
        this.log.info({ job_id: job.id, attempt: job.attempt, status: 'queued' }, 'reserved job handed back at shutdown; it never started'),
      );
  }

  /** Hands jobs back to the queue (see WorkStore.release): the ids handed back, none when the write failed. */
  private async handBack(jobs: readonly HeldJob[], what: string): Promise<Set<string>> {
    if (jobs.length === 0) {
      return new Set();
    }
    try {
      return new Set(await this.store.release(jobs));
    } catch (error) {
      this.log.error({ err: error, jobs: jobs.length }, `handing back ${what} failed; the sweeper will return them after the lock grace`);
      return new Set();
    }
  }

  private async releaseUnfinished(): Promise<void> {
    const unfinished = [...this.executions.values()];
    try {
      const released = new Set(await this.store.release(unfinished.map(({ job }) => job)));
      for (const execution of unfinished) {
        const { job } = execution;
        execution.stop('Worker is shutting down');
        if (released.has(job.id)) {
          this.releasedAtShutdown.add(job.id);
          this.log.info({ job_id: job.id, attempt: job.attempt, status: 'queued' }, 'job released at shutdown; its attempt was given back');
        }
      }
    } catch (error) {
      this.log.error({ err: error }, 'releasing unfinished jobs failed; the sweeper will settle them');
    }
    // Aborted handlers stop at their next checkpoint; their late outcomes are fenced out.
    await Promise.race([this.allDone(), sleep(1000)]);
  }

  private async allDone(): Promise<void> {
    while (this.executions.size > 0) {
      await Promise.all([...this.executions.values()].map((execution) => execution.done));
    }
  }

  private async listen(): Promise<void> {
    // A dying connection can report more than one error: the first one schedules the reconnect.
    let lost = false;
    const reconnect = (error: unknown, client: Client | null, message: string): void => {
      if (lost || this.stopping) {
        return;
      }
      lost = true;
      this.log.warn({ err: error }, message);
      this.listener = null;
      this.options.onListening?.(false);
      void client?.end().catch(() => undefined);
      // Backoff, so a database that is down is not asked every poll interval by every worker.
      const delay = Math.min(this.options.pollIntervalMs * 2 ** this.listenFailures, LISTEN_BACKOFF_MAX_MS);
      this.listenFailures += 1;
      setTimeout(() => void (this.stopping ? undefined : this.listen()), delay).unref();
    };
    let client: Client | null = null;
    try {
      client = await this.options.connectListener();
      const connection = client;
      connection.on('notification', () => this.workQueued());
      connection.on('error', (error) => reconnect(error, connection, 'LISTEN connection lost; polling until it is back'));
      await connection.query(`LISTEN ${this.store.readyChannel}`);
      this.listener = connection;
      this.options.onListening?.(true);
      if (this.listenFailures > 0) {
        this.log.info({ failures: this.listenFailures }, 'LISTEN connection restored');
      }
      this.listenFailures = 0;
    } catch (error) {
      reconnect(error, client, 'LISTEN failed; polling until it works');
    }
  }

  /** Waits for a wake-up (NOTIFY, a freed slot, stop) or, when given, the timeout. */
  private idle(timeoutMs: number | null): Promise<void> {
    return new Promise((resolve) => {
      const timer = timeoutMs === null ? null : setTimeout(() => this.wakeUp(), timeoutMs);
      this.wake = () => {
        if (timer) {
          clearTimeout(timer);
        }
        this.wake = null;
        resolve();
      };
    });
  }

  /** New work was queued (a NOTIFY, or the caller in this process): claim now. */
  workQueued(): void {
    this.notified = true;
    this.wakeUp();
  }

  private wakeUp(): void {
    this.wake?.();
  }
}

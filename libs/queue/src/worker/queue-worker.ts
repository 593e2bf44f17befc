import { setTimeout as sleep } from 'node:timers/promises';

import type { Client, Pool } from 'pg';
import type { Logger } from 'pino';

import { JOBS_READY_CHANNEL } from '../notify';
import { ClaimedJob, JobHandler, JobResult, JobStopped } from './job-handler';
import { FinishedAttempt, JobStore } from './job-store';

export interface QueueWorkerOptions {
  pool: Pool;
  /** Opens the dedicated connection that LISTENs for new jobs. */
  connectListener: () => Promise<Client>;
  workerId: string;
  handlers: ReadonlyMap<string, JobHandler>;
  concurrency: number;
  pollIntervalMs: number;
  lockGraceSeconds: number;
  cancelIntentTtlSeconds: number;
  retentionSeconds: number;
  logger: Logger;
}

interface Execution {
  job: ClaimedJob;
  controller: AbortController;
  done: Promise<void>;
}

const RETENTION_INTERVAL_MS = 10 * 60_000;

/**
 * The job loop of one worker process: claims up to `concurrency` jobs in batches (woken by
 * NOTIFY, else every poll interval), runs them, records outcomes in batches, heartbeats its
 * locks, sweeps other workers' stale locks, and on stop() drains then releases what is left.
 */
export class QueueWorker {
  private readonly store: JobStore;
  private readonly log: Logger;
  private readonly executions = new Map<string, Execution>();
  private readonly outcomes: FinishedAttempt[] = [];
  private flushing: Promise<void> | null = null;
  private timers: NodeJS.Timeout[] = [];
  private listener: Client | null = null;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private notified = false;
  private wake: (() => void) | null = null;

  constructor(private readonly options: QueueWorkerOptions) {
    this.store = new JobStore(options.pool, options.workerId);
    this.log = options.logger.child({ worker: options.workerId });
    // An idle connection that drops (database restart, network cut) must not take the process down:
    // the next query reconnects, and claim/heartbeat failures are logged and retried.
    options.pool.on('error', (error) => this.log.warn({ err: error }, 'idle database connection lost'));
  }

  async start(): Promise<void> {
    await this.listen();
    const lockPeriodMs = Math.max(1000, (this.options.lockGraceSeconds * 1000) / 3);
    this.timers.push(setInterval(() => void this.heartbeat(), lockPeriodMs));
    this.timers.push(setInterval(() => void this.sweep(), lockPeriodMs));
    if (this.options.retentionSeconds > 0) {
      this.timers.push(setInterval(() => void this.deleteExpired(), RETENTION_INTERVAL_MS));
    }
    this.loop = this.claimLoop();
    this.log.info({ concurrency: this.options.concurrency, job_types: [...this.options.handlers.keys()] }, 'queue worker started');
  }

  /** Stops claiming, lets running jobs finish until the deadline, then releases the rest (attempt given back). */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.wakeUp();
    await this.loop;
    const drained = await Promise.race([this.allDone().then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!drained) {
      await this.releaseUnfinished();
    }
    await this.flush();
    this.timers.forEach(clearInterval);
    await this.listener?.end().catch(() => undefined);
    this.log.info({ drained }, 'queue worker stopped');
  }

  private async claimLoop(): Promise<void> {
    const jobTypes = [...this.options.handlers.keys()];
    while (!this.stopping) {
      const free = this.options.concurrency - this.executions.size;
      if (free <= 0) {
        await this.idle(null);
        continue;
      }
      this.notified = false;
      let claimed: ClaimedJob[] = [];
      try {
        claimed = await this.store.claim(free, jobTypes, this.options.cancelIntentTtlSeconds);
      } catch (error) {
        this.log.error({ err: error }, 'claim failed; retrying after the poll interval');
      }
      claimed.forEach((job) => this.begin(job));
      // A short batch means the queue looked empty: wait for NOTIFY, a free slot or the poll.
      if (claimed.length < free && !this.notified) {
        await this.idle(this.options.pollIntervalMs);
      }
    }
  }

  private begin(job: ClaimedJob): void {
    const controller = new AbortController();
    this.log.info({ job_id: job.id, job_type: job.jobType, attempt: job.attempt, max_attempts: job.maxAttempts, status: 'running' }, 'job running');
    const done = this.execute(job, controller.signal)
      .then((result) => this.record(job, result))
      .catch((error: unknown) => this.log.error({ err: error, job_id: job.id }, 'recording the outcome failed; the sweeper will settle the job'))
      .finally(() => {
        this.executions.delete(job.id);
        this.wakeUp();
      });
    this.executions.set(job.id, { job, controller, done });
  }

  private async execute(job: ClaimedJob, signal: AbortSignal): Promise<JobResult> {
    if (job.cancelRequested) {
      // The claim saw a live cancellation intent: that is the attempt's first checkpoint.
      return { outcome: 'cancelled', error: 'Run was cancelled' };
    }
    const checkpoint = async (): Promise<void> => {
      if (signal.aborted) {
        throw new JobStopped(String(signal.reason));
      }
      if (await this.store.cancellationRequested(job.id, this.options.cancelIntentTtlSeconds)) {
        throw new JobStopped('Run was cancelled');
      }
    };
    try {
      return await this.options.handlers.get(job.jobType)!.handle(job, { signal, checkpoint });
    } catch (error) {
      if (error instanceof JobStopped) {
        return { outcome: 'cancelled', error: error.message };
      }
      return { outcome: 'failed', error: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Outcomes without extra writes are batched; one with a `record` step gets its own fenced transaction. */
  private async record(job: ClaimedJob, result: JobResult): Promise<void> {
    const attempt: FinishedAttempt = { id: job.id, attempt: job.attempt, outcome: result.outcome, error: result.error ?? null };
    if (!result.record) {
      this.outcomes.push(attempt);
      await this.flush();
      return;
    }
    const client = await this.options.pool.connect();
    try {
      await client.query('BEGIN');
      const written = await this.store.finish([attempt], client);
      if (written.length > 0) {
        await result.record(client);
      }
      await client.query('COMMIT');
      this.logWritten([attempt], written);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Writes every pending outcome; concurrent callers share the write in flight and the one after it. */
  private async flush(): Promise<void> {
    while (this.outcomes.length > 0) {
      if (this.flushing) {
        await this.flushing;
        continue;
      }
      const batch = this.outcomes.splice(0);
      this.flushing = this.store
        .finish(batch)
        .then((written) => this.logWritten(batch, written))
        .catch((error: unknown) => {
          this.log.error({ err: error, jobs: batch.length }, 'recording outcomes failed; the sweeper will settle these jobs');
        })
        .finally(() => {
          this.flushing = null;
        });
      await this.flushing;
    }
  }

  private logWritten(batch: readonly FinishedAttempt[], written: readonly { id: string; status: string }[]): void {
    const statuses = new Map(written.map((row) => [row.id, row.status]));
    for (const attempt of batch) {
      const status = statuses.get(attempt.id);
      if (status === undefined) {
        this.log.warn({ job_id: attempt.id, attempt: attempt.attempt, outcome: attempt.outcome }, 'job write rejected by the fence: the job was swept, requeued or released meanwhile');
      } else {
        this.log.info({ job_id: attempt.id, attempt: attempt.attempt, status, ...(attempt.error ? { error: attempt.error } : {}) }, `job ${status}`);
      }
    }
  }

  private async heartbeat(): Promise<void> {
    const held = [...this.executions.values()];
    if (held.length === 0) {
      return;
    }
    try {
      const still = await this.store.heartbeat(held.map(({ job }) => job));
      for (const { job, controller } of held) {
        if (!still.has(job.id) && this.executions.get(job.id)?.job === job) {
          this.log.warn({ job_id: job.id, attempt: job.attempt }, 'job lost: its lock was swept or requeued; stopping it at the next checkpoint');
          controller.abort('Worker lost the job (swept or requeued)');
        }
      }
    } catch (error) {
      this.log.error({ err: error }, 'heartbeat failed');
    }
  }

  private async sweep(): Promise<void> {
    try {
      for (const job of await this.store.sweep(this.options.lockGraceSeconds)) {
        this.log.warn({ job_id: job.id, status: job.status, error: job.error }, `job swept to ${job.status}`);
      }
    } catch (error) {
      this.log.error({ err: error }, 'sweep failed');
    }
  }

  private async deleteExpired(): Promise<void> {
    try {
      const deleted = await this.store.deleteExpired(this.options.retentionSeconds, this.options.cancelIntentTtlSeconds);
      if (deleted > 0) {
        this.log.info({ deleted }, 'deleted terminal jobs past retention');
      }
    } catch (error) {
      this.log.error({ err: error }, 'retention cleanup failed');
    }
  }

  private async releaseUnfinished(): Promise<void> {
    const unfinished = [...this.executions.values()];
    try {
      const released = new Set(await this.store.release(unfinished.map(({ job }) => job)));
      for (const { job, controller } of unfinished) {
        controller.abort('Worker is shutting down');
        if (released.has(job.id)) {
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
    try {
      const client = await this.options.connectListener();
      client.on('notification', () => {
        this.notified = true;
        this.wakeUp();
      });
      client.on('error', (error) => {
        this.log.warn({ err: error }, 'LISTEN connection lost; polling until it is back');
        this.listener = null;
        void client.end().catch(() => undefined);
        setTimeout(() => void (this.stopping ? undefined : this.listen()), this.options.pollIntervalMs).unref();
      });
      await client.query(`LISTEN ${JOBS_READY_CHANNEL}`);
      this.listener = client;
    } catch (error) {
      this.log.warn({ err: error }, 'LISTEN failed; polling until it works');
      setTimeout(() => void (this.stopping ? undefined : this.listen()), this.options.pollIntervalMs).unref();
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

  private wakeUp(): void {
    this.wake?.();
  }
}

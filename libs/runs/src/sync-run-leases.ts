import { setTimeout as sleep } from 'node:timers/promises';

import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleDestroy,
} from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

import { Env } from '@app/config';
import { queryPrepared } from '@app/database';
import { DatabaseHealth } from '@app/health';
import { heartbeatPeriodMs } from '@app/queue';

import { RunCancelled } from './component';

const RENEW = {
  name: 'runs_renew_leases',
  text: `UPDATE run_leases SET renewed_at = now() WHERE run_id = ANY ($1::uuid[])`,
};

/** The runs whose leases have not been renewed for the grace, with that renewal (as text: microseconds kept). */
const STALE = {
  name: 'runs_stale_leases',
  text: `SELECT run_id, renewed_at::text AS renewed_at FROM run_leases WHERE renewed_at < now() - make_interval(secs => $1)`,
};

/** The suspects' leases not renewed since the first look go, and their runs, if still running, fail. */
const SWEEP = {
  name: 'runs_sweep_lost',
  text: `WITH lost AS (DELETE FROM run_leases l USING unnest($2::uuid[], $3::timestamptz[]) AS seen(run_id, renewed_at)
                       WHERE l.run_id = seen.run_id AND l.renewed_at = seen.renewed_at
                       RETURNING l.run_id)
         UPDATE runs SET status = 'failed', error = $1, completed_at = now(), updated_at = now()
           FROM lost WHERE runs.id = lost.run_id AND runs.status = 'running'
           RETURNING runs.id`,
};

const LOST = 'Lost: the api running it stopped before the run ended (it had not renewed the run for QUEUE_LOCK_GRACE_SECONDS)';

/** How long runs cancelled at a stop get to reach their next checkpoint and answer. */
const CANCELLED_AT_STOP_MS = 3000;

/**
 * A run the api executes itself (not background) has no queue job to be swept when that api crashes or
 * stops mid-run. So it has a lease (run_leases, written with the run and removed with its outcome, in
 * the same statements), which the api renews while it runs it; a worker fails the run once its lease is
 * older than QUEUE_LOCK_GRACE_SECONDS, as the queue does a lost worker's job.
 */
@Injectable()
export class SyncRunLeases implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger(SyncRunLeases.name);
  /** The runs this process executes, each with what cancels it at a stop. */
  private readonly held = new Map<string, AbortController>();
  private timer: NodeJS.Timeout | null = null;
  /** Set once this api cancels its runs at a stop: a run begun later is cancelled at its first checkpoint. */
  private cancelling = false;

  constructor(
    private readonly env: Env,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /**
   * At boot, not at a process's first run: a timer started inside a request would run in that request's
   * logging context, and every renewal warning would name its request id for the life of the process. A
   * process that runs none (a worker) never renews anything: renew() has nothing to do.
   */
  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.renew(), heartbeatPeriodMs(this.env.QUEUE_LOCK_GRACE_SECONDS)).unref();
  }

  /** Runs `work` on the run while renewing its lease; `stop` aborts when the api stops with the run still held. */
  async holding<T>(runId: string, work: (stop: AbortSignal) => Promise<T>): Promise<T> {
    const stop = new AbortController();
    if (this.cancelling) {
      stop.abort(new RunCancelled());
    }
    this.held.set(runId, stop);
    try {
      return await work(stop.signal);
    } finally {
      this.held.delete(runId);
    }
  }

  /**
   * Before the server closes: the runs this process executes may finish for API_SHUTDOWN_TIMEOUT_SECONDS, then
   * those still running are cancelled, so each caller gets its run's last answer (cancelled) rather than a
   * connection reset at the orchestrator's kill and, a lock grace later, the run failed as lost.
   */
  async beforeApplicationShutdown(): Promise<void> {
    if (await this.settled(this.env.API_SHUTDOWN_TIMEOUT_SECONDS * 1000)) {
      return;
    }
    const runs = [...this.held.values()];
    this.logger.warn({ runs: runs.length }, `stopping: cancelling ${runs.length} run(s) still running after API_SHUTDOWN_TIMEOUT_SECONDS`);
    // In this process, not through the database: it may be away, even the reason for the stop. Cancelled as a
    // cancel asked for is (`Run was cancelled`).
    this.cancelling = true;
    runs.forEach((stop) => stop.abort(new RunCancelled()));
    await this.settled(CANCELLED_AT_STOP_MS);
  }

  /** True once no run is held, false when `ms` passed first. */
  private async settled(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.held.size > 0 && Date.now() < deadline) {
      await sleep(50);
    }
    return this.held.size === 0;
  }

  onApplicationShutdown(): void {
    if (this.timer) {
      clearInterval(this.timer);
    }
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) {
      return;
    }
    await queryPrepared(this.dataSource, RENEW, [[...this.held.keys()]]).catch((error: unknown) =>
      this.logger.warn({ err: error, runs: this.held.size }, 'Renewing the leases of running runs failed'),
    );
  }
}

/** The worker's side: fails the runs whose api stopped renewing them. */
@Injectable()
export class LostSyncRunSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Runs');
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Leases that looked stale at the last look (run id, renewal), and when that answer came (see sweep). */
  private suspects: { leases: { run_id: string; renewed_at: string }[]; seenAt: number } | null = null;

  constructor(
    private readonly env: Env,
    private readonly database: DatabaseHealth,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  onApplicationBootstrap(): void {
    void this.database.whenMigrated().then(() => {
      if (!this.stopped) {
        this.timer = setInterval(() => void this.sweep(), heartbeatPeriodMs(this.env.QUEUE_LOCK_GRACE_SECONDS));
      }
    });
  }

  onModuleDestroy(): void {
    this.stopped = true;
    if (this.timer) {
      clearInterval(this.timer);
    }
  }

  /**
   * In two looks: a run whose lease is stale at one look fails at a later one, two renewal periods after the first
   * answered, if its lease has not been renewed since. Back from an outage longer than the grace, every live api's
   * leases look stale; each api renews within a period of the database answering again (its next renewal, or one
   * pending through the outage landing at once), so the second look finds only the runs of an api that stopped,
   * with a period to spare for a renewal that came late. Queue jobs are swept in two looks too.
   */
  async sweep(): Promise<void> {
    const grace = this.env.QUEUE_LOCK_GRACE_SECONDS;
    const suspects = this.suspects;
    if (suspects && Date.now() - suspects.seenAt < 2 * heartbeatPeriodMs(grace)) {
      return;
    }
    this.suspects = null;
    try {
      if (suspects) {
        const { leases } = suspects;
        const { rows } = await queryPrepared<{ id: string }>(this.dataSource, SWEEP, [
          LOST,
          leases.map((lease) => lease.run_id),
          leases.map((lease) => lease.renewed_at),
        ]);
        if (rows.length > 0) {
          this.logger.warn({ run_ids: rows.map((row) => row.id) }, `${rows.length} run(s) failed as lost: their api stopped mid-run`);
        }
      }
      const { rows: stale } = await queryPrepared<{ run_id: string; renewed_at: string }>(this.dataSource, STALE, [grace]);
      this.suspects = stale.length > 0 ? { leases: stale, seenAt: Date.now() } : null;
    } catch (error) {
      this.logger.warn({ err: error }, 'Sweeping lost runs failed');
    }
  }
}

import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';

import { Env } from '@app/config';
import { DatabaseHealth, Liveness, MetricsRegistry } from '@app/health';
import { newWorkerId, QueueEngineHost } from '@app/queue';

import { ClaimedFire, SCHEDULE_FIRE_JOB_TYPE, ScheduleFireStore } from './schedule-fire-store';
import { ScheduleFirer } from './schedule-firer';

/** Connections of the engine's own statements (claim, outcomes, heartbeat, sweep, count folding); a fire's handler uses the app's pool. */
const ENGINE_CONNECTIONS = 3;

/**
 * Runs queued schedule fires on the queue engine, beside the job queue's: up to SCHEDULE_CONCURRENCY
 * at once, heartbeated, a lost fire swept to failed, and at shutdown one deadline shared with the
 * job queue, after which a fire still in flight is stopped and recorded as cut. Fires keep their own
 * pool of slots so that a fire following a background run never holds the slot that run needs.
 */
@Injectable()
export class ScheduleFireWorker extends QueueEngineHost<ClaimedFire> implements OnApplicationBootstrap {
  /** Fits schedule_runs.locked_by (64). */
  readonly workerId = newWorkerId(40);

  constructor(
    env: Env,
    database: DatabaseHealth,
    metrics: MetricsRegistry,
    liveness: Liveness,
    private readonly firer: ScheduleFirer,
    private readonly pino: PinoLogger,
  ) {
    super('schedule fires', env, database, metrics, liveness);
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.env.PUBLIC_URL) {
      // The default names this machine: right for npm start, wrong for a worker deployed apart from the api.
      this.pino.logger.warn(
        `PUBLIC_URL is unset: schedule fires call ${this.env.publicUrl}, an api on this machine. Set PUBLIC_URL to the api's URL when the worker runs elsewhere`,
      );
    }
    await this.startEngine({
      connections: ENGINE_CONNECTIONS,
      store: (pool) => new ScheduleFireStore(pool, this.workerId),
      handlers: new Map([[SCHEDULE_FIRE_JOB_TYPE, this.firer]]),
      concurrency: this.env.SCHEDULE_CONCURRENCY,
      prefetch: null,
      // A fire's claim is a transaction of several statements (the overlap policy): refill a quarter at a time.
      claimAtLeast: Math.ceil(this.env.SCHEDULE_CONCURRENCY / 4),
      pollIntervalMs: this.env.SCHEDULE_TICK_INTERVAL_MS,
      lockGraceSeconds: this.env.QUEUE_LOCK_GRACE_SECONDS,
      // A fire is the schedule's history (GET /schedules/{id}/runs), not a queue entry: it is kept.
      retentionSeconds: 0,
      logger: this.pino.logger.child({ context: 'schedules' }),
    });
  }

  /** Fires were queued in this process: claim them now rather than at the next poll. */
  workQueued(): void {
    this.engine?.workQueued();
  }
}

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';

import { Env } from '@app/config';

import { ClaimedFire, ScheduleDispatchRepository } from './schedule-dispatch.repository';
import { ScheduleFirer } from './schedule-firer';

const TIMER = 'schedules';
const QUEUE_BATCH = 500;

/**
 * The worker's schedule loop. Each tick fails fires whose worker died, queues every due slot
 * (any number of workers may tick: claims skip locked rows), then runs up to
 * SCHEDULE_CONCURRENCY queued fires; a finished fire makes room for the next at once.
 */
@Injectable()
export class ScheduleTicker implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown {
  private readonly logger = new Logger(ScheduleTicker.name);
  readonly workerId = `${hostname().slice(0, 40)}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private ticking = false;
  private filling = false;
  private refill = false;
  private stopping = false;
  private deadline = 0;

  constructor(
    private readonly env: Env,
    private readonly registry: SchedulerRegistry,
    private readonly dispatch: ScheduleDispatchRepository,
    private readonly firer: ScheduleFirer,
  ) {}

  onApplicationBootstrap(): void {
    this.registry.addInterval(
      TIMER,
      setInterval(() => void this.tick(), this.env.SCHEDULE_TICK_INTERVAL_MS),
    );
    void this.tick();
  }

  /** Shutdown starts for every module at once: no new claims, and the queue's drain runs alongside this one. */
  onModuleDestroy(): void {
    this.stopping = true;
    this.deadline = Date.now() + this.env.WORKER_SHUTDOWN_TIMEOUT_SECONDS * 1000;
    // @nestjs/schedule may have cleared its timers already during shutdown.
    if (this.registry.doesExist('interval', TIMER)) {
      this.registry.deleteInterval(TIMER);
    }
  }

  /** Fires get until the shutdown deadline to finish (before the database goes); what is left is cut and recorded as failed. */
  async beforeApplicationShutdown(): Promise<void> {
    const settled = Promise.allSettled([...this.inFlight]);
    const graceOver = new Promise((resolve) => setTimeout(resolve, Math.max(0, this.deadline - Date.now())).unref());
    if ((await Promise.race([settled.then(() => 'done'), graceOver])) !== 'done') {
      this.shutdown.abort();
      await settled;
    }
  }

  async tick(): Promise<void> {
    if (this.ticking || this.stopping) {
      return;
    }
    this.ticking = true;
    try {
      await this.dispatch.failLost();
      while ((await this.dispatch.queueDue(QUEUE_BATCH)) === QUEUE_BATCH) {
        // a full batch: more slots may be due
      }
      await this.fill();
    } catch (error) {
      this.logger.warn({ err: error }, 'Schedule tick failed');
    } finally {
      this.ticking = false;
    }
  }

  private async fill(): Promise<void> {
    if (this.filling) {
      this.refill = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.refill = false;
        const free = this.env.SCHEDULE_CONCURRENCY - this.inFlight.size;
        // Claim in batches (a quarter of the slots at least) rather than one query per finished fire.
        if (this.stopping || free <= 0 || (this.inFlight.size > 0 && free < Math.ceil(this.env.SCHEDULE_CONCURRENCY / 4))) {
          return;
        }
        (await this.dispatch.claim(this.workerId, free)).forEach((fire) => this.start(fire));
      } while (this.refill);
    } finally {
      this.filling = false;
    }
  }

  private start(fire: ClaimedFire): void {
    const running: Promise<void> = this.firer
      .fire(fire, this.workerId, this.shutdown.signal)
      .catch((error: unknown) =>
        this.logger.error({ err: error, fire_id: fire.runId, schedule_id: fire.scheduleId }, 'Schedule fire failed'),
      )
      .finally(() => {
        this.inFlight.delete(running);
        void this.fill().catch((error: unknown) => this.logger.warn({ err: error }, 'Schedule claim failed'));
      });
    this.inFlight.add(running);
  }
}

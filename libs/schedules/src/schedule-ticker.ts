import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';

import { Env } from '@app/config';
import { DatabaseHealth } from '@app/health';

import { ScheduleDispatchRepository } from './schedule-dispatch.repository';
import { ScheduleFireWorker } from './schedule-fire-worker';

const QUEUE_BATCH = 500;
/** Past the instant a tick is aligned to, so a slot due exactly then is already due by the database's clock. */
const TICK_MARGIN_MS = 5;

/**
 * The worker's cron: each tick queues every due slot as a fire (any number of workers may tick:
 * due schedules are taken with SKIP LOCKED) and hands them to the fire engine. Ticks fall on
 * multiples of SCHEDULE_TICK_INTERVAL_MS on the clock, so a slot (always on a whole minute) is
 * queued within milliseconds of its time rather than up to one interval later.
 */
@Injectable()
export class ScheduleTicker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ScheduleTicker.name);
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  /** Since when ticks have failed (null: the last one succeeded). */
  private failingSince: number | null = null;
  private stopping = false;

  constructor(
    private readonly env: Env,
    private readonly database: DatabaseHealth,
    private readonly dispatch: ScheduleDispatchRepository,
    private readonly fires: ScheduleFireWorker,
  ) {}

  onApplicationBootstrap(): void {
    void this.database.whenMigrated().then(() => this.tick());
  }

  onModuleDestroy(): void {
    this.stopping = true;
    if (this.timer) {
      clearTimeout(this.timer);
    }
  }

  async tick(): Promise<void> {
    if (this.ticking || this.stopping) {
      return;
    }
    this.ticking = true;
    try {
      let queued = 0;
      let batch: number;
      do {
        batch = await this.dispatch.queueDue(QUEUE_BATCH);
        queued += batch;
      } while (batch === QUEUE_BATCH);
      if (queued > 0) {
        this.fires.workQueued();
      }
      if (this.failingSince !== null) {
        this.logger.warn(`Schedule ticks resumed after ${((Date.now() - this.failingSince) / 1000).toFixed(1)} s of failures`);
        this.failingSince = null;
      }
    } catch (error) {
      // A tick a second: an outage is said once, its repeats at debug.
      if (this.failingSince === null) {
        this.failingSince = Date.now();
        this.logger.warn({ err: error }, 'Schedule tick failed; retrying every tick (repeats at debug until one succeeds)');
      } else {
        this.logger.debug({ err: error }, 'Schedule tick failed');
      }
    } finally {
      this.ticking = false;
      this.scheduleNext();
    }
  }

  private scheduleNext(): void {
    if (this.stopping) {
      return;
    }
    const interval = this.env.SCHEDULE_TICK_INTERVAL_MS;
    this.timer = setTimeout(() => void this.tick(), interval - (Date.now() % interval) + TICK_MARGIN_MS);
  }
}

import { Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';

import { MetricsRegistry } from '@app/health';

/** The worker's schedule figures for its /metrics: the fires this process ran. */
@Injectable()
export class ScheduleFireMetrics {
  readonly fires: Counter<'outcome'>;
  readonly lag: Histogram<'trigger'>;

  constructor(registry: MetricsRegistry) {
    this.fires = new Counter({
      name: 'schedule_fires_total',
      help: 'Schedule fires this worker ran, by outcome: success, failed, skipped (disabled before it started)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.lag = new Histogram({
      name: 'schedule_fire_lag_seconds',
      help: 'From the time a fire was due (its cron slot, or when a manual trigger was accepted) to its start, by trigger',
      labelNames: ['trigger'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers: [registry],
    });
    for (const outcome of ['success', 'failed', 'skipped']) {
      this.fires.inc({ outcome }, 0);
    }
  }
}

import { Injectable, Logger } from '@nestjs/common';
import { Registry } from 'prom-client';

import { isDatabaseUnavailable, isSchemaMismatch } from '@app/database';
import { MetricsRegistry } from '@app/health';
import { LastingCondition } from '@app/logging';
import { QueueMetricsService } from '@app/queue';
import { ScheduleMetricsService } from '@app/schedules';

/** What a scrape of the api answers, wherever it is asked: GET /metrics, or API_METRICS_PORT. */
@Injectable()
export class MetricsScrape {
  private readonly log = new Logger('Metrics');
  /** Scrapes answered without the database's figures: every 15 s or so while it is down, said once a minute. */
  private readonly withoutDatabase = new LastingCondition();

  constructor(
    private readonly queue: QueueMetricsService,
    private readonly schedules: ScheduleMetricsService,
    private readonly process: MetricsRegistry,
  ) {}

  async text(): Promise<{ contentType: string; body: string }> {
    // The queue and schedule figures come from the database; this process's own do not, and an outage is when
    // they matter: without the database (or before its migrations) the scrape answers them alone (the others
    // absent, not stale).
    const fromDatabase = await Promise.all([this.queue.refresh(), this.schedules.refresh()]).then(
      () => {
        this.withoutDatabase.ended(() => this.log.log('metrics scraped with the queue and schedule figures again'));
        return [this.queue.registry, this.schedules.registry];
      },
      (error: unknown) => {
        const why = isDatabaseUnavailable(error)
          ? 'is unavailable'
          : isSchemaMismatch(error)
            ? "schema does not match this build's (migrations pending?)"
            : null;
        if (why === null) {
          throw error;
        }
        this.withoutDatabase.met(1, (scrapes) =>
          this.log.warn(
            { err: error },
            `metrics scraped without the queue and schedule figures (${scrapes} scrape(s) since last said): the database ${why}; said again once a minute while it lasts`,
          ),
        );
        return [];
      },
    );
    const registry = Registry.merge([...fromDatabase, this.process]);
    return { contentType: registry.contentType, body: await registry.metrics() };
  }
}

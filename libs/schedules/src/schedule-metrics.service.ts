import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Counter, Registry } from 'prom-client';
import { DataSource } from 'typeorm';

import { COUNTED_SKIP_REASONS } from './schedule-run.entity';

/**
 * Schedule figures for /metrics, read from PostgreSQL at scrape time so every api replica reports
 * every worker's fires. The skipped totals are kept as deltas by triggers on schedule_runs and
 * folded by the workers (a fire skipped because its schedule was disabled first has no policy reason:
 * it is counted as `disabled`), so a scrape sums a handful of rows, however much history there is.
 */
@Injectable()
export class ScheduleMetricsService {
  readonly registry = new Registry();
  private readonly skipped = new Counter({
    name: 'schedule_fires_skipped_total',
    help: 'Schedule fires that did not happen, by reason: overlap, missed, buffer_full (policies), disabled',
    labelNames: ['reason'],
    registers: [this.registry],
  });

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async refresh(): Promise<void> {
    const rows: { reason: string; total: string }[] = await this.db.query(
      `SELECT reason, sum(delta) AS total FROM schedule_fire_skip_counts GROUP BY reason`,
    );
    this.skipped.reset();
    for (const reason of COUNTED_SKIP_REASONS) {
      this.skipped.inc({ reason }, Number(rows.find((row) => row.reason === reason)?.total ?? 0));
    }
  }
}

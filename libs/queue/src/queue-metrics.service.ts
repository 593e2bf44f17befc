import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Counter, Gauge, Registry } from 'prom-client';
import { Repository } from 'typeorm';

import { JobOutcomeCounterEntity } from './job-outcome-counter.entity';
import { JOB_STATUSES } from './job-status';
import { QueueAdminService } from './queue-admin.service';

/** Outcomes that count as a failed attempt: an error (final or retried) or a lost worker. */
const FAILED_OUTCOMES = ['failed', 'retried', 'lost'];

/**
 * Prometheus text for /metrics. Every number is read from PostgreSQL at scrape time, so any
 * api replica reports the same totals for all workers.
 */
@Injectable()
export class QueueMetricsService {
  readonly registry = new Registry();
  private readonly depth = new Gauge({
    name: 'queue_jobs',
    help: 'Queue jobs by status',
    labelNames: ['status'],
    registers: [this.registry],
  });
  private readonly oldest = new Gauge({
    name: 'queue_oldest_queued_age_seconds',
    help: 'How long the longest-waiting claimable queued job has waited since it became available (0 when none)',
    registers: [this.registry],
  });
  private readonly processed = new Counter({
    name: 'queue_jobs_processed_total',
    help: 'Job attempts finished, by outcome: completed, failed, retried, cancelled, paused, lost (swept)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  private readonly failed = new Counter({
    name: 'queue_jobs_failed_total',
    help: 'Job attempts that failed: an error (final or retried) or a lost worker',
    registers: [this.registry],
  });

  constructor(
    private readonly admin: QueueAdminService,
    @InjectRepository(JobOutcomeCounterEntity) private readonly counters: Repository<JobOutcomeCounterEntity>,
  ) {}

  /** Reads the current figures into the registry. */
  async refresh(): Promise<void> {
    const [stats, totals] = await Promise.all([this.admin.stats(), this.counters.find()]);
    // Read first, then reset and count with no await between: two scrapes at once cannot add their totals twice.
    JOB_STATUSES.forEach((status) => this.depth.set({ status }, stats.counts[status]));
    this.oldest.set(stats.oldest_queued_age_seconds ?? 0);
    this.processed.reset();
    this.failed.reset();
    for (const row of totals) {
      this.processed.inc({ outcome: row.outcome }, Number(row.total));
      if (FAILED_OUTCOMES.includes(row.outcome)) {
        this.failed.inc(Number(row.total));
      }
    }
  }
}

import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The job loop's figures for the worker's /metrics: this process only, reset when it restarts. */
export class QueueWorkerMetrics {
  readonly claims: Counter<'result'>;
  readonly claimed: Counter;
  readonly running: Gauge;
  readonly duration: Histogram<'job_type' | 'outcome'>;
  readonly heartbeats: Counter<'result'>;
  readonly lost: Counter;
  readonly sweeps: Counter<'result'>;
  readonly swept: Counter<'status'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.claims = new Counter({
      name: 'worker_claims_total',
      help: 'Claim statements this worker ran, by result: ok or error',
      labelNames: ['result'],
      registers,
    });
    this.claimed = new Counter({
      name: 'worker_jobs_claimed_total',
      help: 'Jobs this worker claimed (started at once or reserved ahead)',
      registers,
    });
    this.running = new Gauge({ name: 'worker_jobs_running', help: 'Jobs whose handler is running in this worker', registers });
    this.duration = new Histogram({
      name: 'worker_job_duration_seconds',
      help: 'Handler run time of a job attempt, by job type and outcome (completed, failed, cancelled, ...)',
      labelNames: ['job_type', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    });
    this.heartbeats = new Counter({
      name: 'worker_heartbeats_total',
      help: 'Lock heartbeats this worker sent, by result: ok or error',
      labelNames: ['result'],
      registers,
    });
    this.lost = new Counter({
      name: 'worker_jobs_lost_total',
      help: 'Running jobs this worker stopped because its lock was swept or requeued meanwhile',
      registers,
    });
    this.sweeps = new Counter({
      name: 'worker_sweeps_total',
      help: 'Sweeps for stale locks of lost workers, by result: ok or error',
      labelNames: ['result'],
      registers,
    });
    this.swept = new Counter({
      name: 'worker_jobs_swept_total',
      help: 'Jobs of lost workers this worker swept, by the status they got (queued, failed)',
      labelNames: ['status'],
      registers,
    });
    // Present from the first scrape, so rate() and absence alerts work before the first event.
    for (const result of ['ok', 'error']) {
      this.claims.inc({ result }, 0);
      this.heartbeats.inc({ result }, 0);
      this.sweeps.inc({ result }, 0);
    }
  }
}

/**
 * 1 while an engine's LISTEN connection is up, 0 while it is lost and the engine finds new work only by
 * polling (slower pickup); one series per engine, by the channel it listens on. Shared by the job queue's
 * and the schedule fires' engines, so made once per registry.
 */
export function listeningGauge(registry: Registry): Gauge<'channel'> {
  const name = 'worker_listen_connected';
  return (
    (registry.getSingleMetric(name) as Gauge<'channel'> | undefined) ??
    new Gauge({
      name,
      help: "1 while the engine's LISTEN connection is up, 0 while it polls for new work instead",
      labelNames: ['channel'],
      registers: [registry],
    })
  );
}

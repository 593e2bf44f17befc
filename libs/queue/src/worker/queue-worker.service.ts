import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { PinoLogger } from 'nestjs-pino';

import { Env } from '@app/config';
import { DatabaseHealth, Liveness, MetricsRegistry } from '@app/health';

import { JOB_TYPES } from '../job-status';
import { JOB_HANDLER, JobHandler } from './job-handler';
import { JobStore } from './job-store';
import { newWorkerId, QueueEngineHost } from './queue-engine-host';
import { QueueWorkerMetrics } from './queue-worker-metrics';

/**
 * Runs the queue worker inside the worker app: finds the @HandlesJobs providers (boot fails
 * when a job type has none or two), starts claiming at bootstrap, and drains on shutdown
 * within WORKER_SHUTDOWN_TIMEOUT_SECONDS.
 */
@Injectable()
export class QueueWorkerService extends QueueEngineHost implements OnApplicationBootstrap {
  constructor(
    env: Env,
    database: DatabaseHealth,
    private readonly discovery: DiscoveryService,
    private readonly metrics: MetricsRegistry,
    liveness: Liveness,
    private readonly pino: PinoLogger,
  ) {
    super('the job queue', env, database, metrics, liveness);
  }

  async onApplicationBootstrap(): Promise<void> {
    const handlers = this.findHandlers();
    // The process's pino logger itself: the job loop adds its own bindings (worker id) with child().
    const logger = this.pino.logger;
    if (!this.env.QUEUE_ENABLED) {
      logger.info('QUEUE_ENABLED=false: this worker claims no jobs');
      return;
    }
    await this.startEngine({
      connections: this.env.WORKER_CONCURRENCY + 2,
      setUpConnection: JobStore.setUpConnection,
      store: (pool) => new JobStore(pool, newWorkerId(), this.env.QUEUE_CANCEL_INTENT_TTL_SECONDS),
      handlers,
      concurrency: this.env.WORKER_CONCURRENCY,
      prefetch: { jobs: this.env.WORKER_PREFETCH, horizonMs: this.env.WORKER_PREFETCH_HORIZON_MS },
      pollIntervalMs: this.env.QUEUE_POLL_INTERVAL_MS,
      lockGraceSeconds: this.env.QUEUE_LOCK_GRACE_SECONDS,
      retentionSeconds: this.env.QUEUE_RETENTION_SECONDS,
      logger,
      metrics: new QueueWorkerMetrics(this.metrics),
    });
  }

  private findHandlers(): Map<string, JobHandler> {
    const handlers = new Map<string, JobHandler>();
    for (const wrapper of this.discovery.getProviders()) {
      const jobType = wrapper.metatype ? Reflect.getMetadata(JOB_HANDLER, wrapper.metatype) : undefined;
      if (typeof jobType !== 'string') {
        continue;
      }
      if (handlers.has(jobType)) {
        throw new Error(`Job type '${jobType}' has two handlers`);
      }
      handlers.set(jobType, wrapper.instance as JobHandler);
    }
    const missing = JOB_TYPES.filter((jobType) => !handlers.has(jobType));
    if (missing.length > 0) {
      throw new Error(`No handler for job type(s): ${missing.join(', ')}`);
    }
    return handlers;
  }
}

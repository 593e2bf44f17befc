import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { PinoLogger } from 'nestjs-pino';
import { Pool } from 'pg';

import { Env } from '@app/config';
import { ConnectionClient } from '@app/database';
import { MetricsRegistry } from '@app/health';

import { JOB_TYPES } from '../job-status';
import { JOB_HANDLER, JobHandler } from './job-handler';
import { JobStore } from './job-store';
import { QueueWorker } from './queue-worker';
import { QueueWorkerMetrics } from './queue-worker-metrics';

/** The dedicated connection a queue engine LISTENs on. */
export async function connectListener(connectionString: string): Promise<ConnectionClient> {
  const client = new ConnectionClient({ connectionString });
  await client.connect();
  return client;
}

/** `host:pid:random`: unique per engine, and readable in `locked_by` (the host cut to fit the column). */
export function newWorkerId(maxHostChars = 80): string {
  return `${hostname().slice(0, maxHostChars)}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * Runs the queue worker inside the worker app: finds the @HandlesJobs providers (boot fails
 * when a job type has none or two), starts claiming at bootstrap, and drains on shutdown
 * within WORKER_SHUTDOWN_TIMEOUT_SECONDS.
 */
@Injectable()
export class QueueWorkerService implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown {
  private worker: QueueWorker | null = null;
  private pool: Pool | null = null;
  private stopped: Promise<void> | null = null;

  constructor(
    private readonly env: Env,
    private readonly discovery: DiscoveryService,
    private readonly metrics: MetricsRegistry,
    private readonly pino: PinoLogger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const handlers = this.findHandlers();
    // The process's pino logger itself: the job loop adds its own bindings (worker id) with child().
    const logger = this.pino.logger;
    if (!this.env.QUEUE_ENABLED) {
      logger.info('QUEUE_ENABLED=false: this worker claims no jobs');
      return;
    }
    const connectionString = this.env.databaseUrl;
    this.pool = new Pool({ connectionString, max: this.env.WORKER_CONCURRENCY + 2, Client: ConnectionClient });
    this.worker = new QueueWorker({
      pool: this.pool,
      connectListener: () => connectListener(connectionString),
      store: new JobStore(this.pool, newWorkerId(), this.env.QUEUE_CANCEL_INTENT_TTL_SECONDS),
      handlers,
      concurrency: this.env.WORKER_CONCURRENCY,
      prefetch: this.env.WORKER_PREFETCH,
      pollIntervalMs: this.env.QUEUE_POLL_INTERVAL_MS,
      lockGraceSeconds: this.env.QUEUE_LOCK_GRACE_SECONDS,
      retentionSeconds: this.env.QUEUE_RETENTION_SECONDS,
      logger,
      metrics: new QueueWorkerMetrics(this.metrics),
    });
    await this.worker.start();
  }

  /**
   * Shutdown starts here, for every module at once, so the queue drains alongside the schedule
   * fires within one WORKER_SHUTDOWN_TIMEOUT_SECONDS rather than one after the other.
   */
  onModuleDestroy(): void {
    this.stopped = this.worker?.stop(this.env.WORKER_SHUTDOWN_TIMEOUT_SECONDS * 1000) ?? null;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stopped;
    await this.pool?.end();
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

import { Server } from 'node:http';

import { Injectable, Logger, OnApplicationShutdown, OnModuleDestroy, OnModuleInit } from '@nestjs/common';

import { Env } from '@app/config';
import { closeProbes, DatabaseHealth, listenProbes, Liveness, MetricsRegistry, NOT_READY_DETAIL, Probe } from '@app/health';

/**
 * The worker's only listener: `/livez` (the process answers, and no queue engine is stuck on the database), `/readyz` (the database answers, is
 * migrated, and the worker is not shutting down) and `/metrics` (this process's Prometheus text) on
 * WORKER_HEALTH_PORT, for orchestrators and scrapers.
 */
@Injectable()
export class WorkerHealthServer implements OnModuleInit, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger('WorkerHealth');
  private server: Server | null = null;
  private shuttingDown = false;
  private readonly probes: Record<string, Probe> = {
    '/livez': async () => this.liveness(),
    '/readyz': () => this.readiness(),
    '/metrics': async () => ({ status: 200, body: await this.metrics.metrics(), contentType: this.metrics.contentType }),
  };

  constructor(
    private readonly env: Env,
    private readonly database: DatabaseHealth,
    private readonly metrics: MetricsRegistry,
    private readonly live: Liveness,
  ) {}

  /**
   * Bound at module init, before any engine starts claiming (at application bootstrap): a port already taken
   * ends the boot while every job is still in the queue, where binding after the claims left the jobs claimed
   * by a process that then exited, their attempts spent, until the lock grace ran out.
   */
  async onModuleInit(): Promise<void> {
    const port = this.env.WORKER_HEALTH_PORT;
    if (port === undefined) {
      return;
    }
    const server = await listenProbes(this.probes, { port, portVariable: 'WORKER_HEALTH_PORT', host: this.env.HOST }, (error, path) =>
      this.logger.error({ err: error, path }, 'health probe failed'),
    );
    this.server = server;
    this.logger.log(`Health probes on http://${this.env.HOST}:${port}/livez and /readyz, metrics on /metrics`);
  }

  /** The first shutdown hook: stop reporting ready while the job loop drains; /livez stays up. */
  onModuleDestroy(): void {
    this.shuttingDown = true;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) {
      await closeProbes(server);
    }
  }

  /** Up while the process answers, unless a queue engine is stuck on a database call that never returns. */
  private async liveness(): ReturnType<Probe> {
    const problems = this.live.problems();
    return problems.length === 0
      ? { status: 200, body: { status: 'ok' } }
      : { status: 503, body: { detail: `Not live: ${problems.join('; ')}. Restart this worker` } };
  }

  private async readiness(): ReturnType<Probe> {
    if (this.shuttingDown) {
      return { status: 503, body: { detail: 'Not ready: shutting down' } };
    }
    const state = await this.database.check();
    if (state !== 'ok') {
      return { status: 503, body: { detail: NOT_READY_DETAIL[state] } };
    }
    return { status: 200, body: { status: 'ok', checks: { database: 'ok' } } };
  }
}

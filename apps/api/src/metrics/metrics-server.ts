import { Server } from 'node:http';

import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';

import { Env } from '@app/config';
import { closeProbes, listenProbes } from '@app/health';

import { MetricsScrape } from './metrics-scrape';

/**
 * `/metrics` without a credential on API_METRICS_PORT, as each worker serves its own on WORKER_HEALTH_PORT: a
 * scraper then needs no credential, where the api's own GET /metrics takes platform:admin, which reaches
 * everything. Keep the port inside the cluster. Unset: no listener.
 */
@Injectable()
export class ApiMetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server: Server | null = null;

  constructor(
    private readonly env: Env,
    private readonly scrape: MetricsScrape,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const port = this.env.API_METRICS_PORT;
    if (port === undefined) {
      return;
    }
    this.server = await listenProbes(
      {
        '/metrics': async () => {
          const { contentType, body } = await this.scrape.text();
          return { status: 200, body, contentType };
        },
      },
      { port, portVariable: 'API_METRICS_PORT', host: this.env.HOST },
      (error) => this.logger.error({ err: error }, 'metrics scrape failed'),
    );
    this.logger.log(`Metrics without a credential on http://${this.env.HOST}:${port}/metrics`);
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) {
      await closeProbes(server);
    }
  }
}

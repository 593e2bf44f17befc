import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

import { SERVICE_VERSION } from '@app/config';

/**
 * prom-client's gauges of totals named like counters, which `promtool check metrics` rejects; the same
 * figures by type stay (`nodejs_active_handles{type}`, ...), and their sum is the total.
 */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * This process's own figures for its /metrics: which release it runs, prom-client's process and
 * event-loop metrics, and whatever the modules of the process register (HTTP latency in the api, the job
 * loop and schedule fires in the worker). One per process.
 */
@Injectable()
export class MetricsRegistry extends Registry {
  constructor() {
    super();
    collectDefaultMetrics({ register: this });
    MISNAMED_DEFAULTS.forEach((name) => this.removeSingleMetric(name));
    // The usual info metric: 1, its labels say what runs (a half-done rolling update shows as two versions).
    new Gauge({
      name: 'platform_build_info',
      help: 'The release this process runs (version) and its Node.js (node_version); always 1',
      labelNames: ['version', 'node_version'],
      registers: [this],
    }).set({ version: SERVICE_VERSION, node_version: process.version }, 1);
  }
}

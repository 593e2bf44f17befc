import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * prom-client's gauges of totals named like counters, which `promtool check metrics` rejects; the same
 * figures by type stay (`nodejs_active_handles{type}`, ...), and their sum is the total.
 */
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * This process's own figures for its /metrics: prom-client's process and event-loop metrics, and
 * whatever the modules of the process register (HTTP latency in the api, the job loop and schedule
 * fires in the worker). One per process.
 */
@Injectable()
export class MetricsRegistry extends Registry {
  constructor() {
    super();
    collectDefaultMetrics({ register: this });
    MISNAMED_DEFAULTS.forEach((name) => this.removeSingleMetric(name));
  }
}

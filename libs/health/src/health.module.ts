import { Module } from '@nestjs/common';

import { DatabaseHealth } from './database-health.service';
import { MetricsRegistry } from './metrics-registry';

/** Readiness checks shared by the api's /readyz and the worker's health port, and the process's metrics. */
@Module({ providers: [DatabaseHealth, MetricsRegistry], exports: [DatabaseHealth, MetricsRegistry] })
export class HealthModule {}

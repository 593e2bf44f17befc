import { Module } from '@nestjs/common';

import { DatabaseHealth } from './database-health.service';
import { Liveness } from './liveness';
import { MetricsRegistry } from './metrics-registry';

/** Readiness and liveness checks shared by the api's probes and the worker's health port, and the process's metrics. */
@Module({ providers: [DatabaseHealth, Liveness, MetricsRegistry], exports: [DatabaseHealth, Liveness, MetricsRegistry] })
export class HealthModule {}

import { Module } from '@nestjs/common';

import { DatabaseHealth } from './database-health.service';

/** Readiness checks shared by the api's /readyz and the worker's health port. */
@Module({ providers: [DatabaseHealth], exports: [DatabaseHealth] })
export class HealthModule {}

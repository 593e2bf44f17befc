export * from './database-health.service';
export * from './health.module';
export * from './liveness';
export * from './metrics-registry';
export * from './probe-server';

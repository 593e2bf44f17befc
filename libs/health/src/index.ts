export * from './database-health.service';
export * from './health.module';
export * from './metrics-registry';

export * from './config.module';
export * from './env';
export * from './version';

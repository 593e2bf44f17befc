export * from './boot-error';
export * from './boot-signals';
export * from './config.module';
export * from './env';
export * from './loopback';
export * from './version';
export * from './weak-secret';

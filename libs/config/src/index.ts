export * from './boot-error';
export * from './config.module';
export * from './env';
export * from './loopback';
export * from './version';
export * from './weak-secret';

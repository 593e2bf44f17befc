export * from './cli-error';
export * from './terminal';

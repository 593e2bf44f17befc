export * from './cli-error';
export * from './output';
export * from './terminal';

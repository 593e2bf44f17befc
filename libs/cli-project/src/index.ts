export * from './compose';
export * from './repository-url';
export * from './scaffold';
export * from './templates';

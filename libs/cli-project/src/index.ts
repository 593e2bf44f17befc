export * from './compose';
export * from './scaffold';
export * from './templates';

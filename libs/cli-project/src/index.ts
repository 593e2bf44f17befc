export * from './compose';
export * from './scaffold';

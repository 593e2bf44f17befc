export * from './logger';
export * from './lasting-condition';

export * from './data-scope';
export * from './principal';
export * from './scope';

export * from './component-kind';
export * from './data-scope';
export * from './principal';
export * from './scope';

export * from './fields';
export * from './storable-text';

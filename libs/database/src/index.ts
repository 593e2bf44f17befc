export * from './connection-client';
export * from './count-deltas';
export * from './data-source';
export * from './database-errors';
export * from './database.module';
export * from './epoch';
export * from './prepared';
export * from './transaction';

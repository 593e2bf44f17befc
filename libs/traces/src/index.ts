export * from './request-span';
export * from './run-span';
export type { StoredSpan } from './trace.entity';
export * from './trace.dto';
export * from './trace-retention';
export * from './traces.exception';
export * from './traces.module';
export * from './traces.service';
export * from './tracing';

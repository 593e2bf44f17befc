export * from './request-span';
export * from './run-span';
export * from './trace.dto';
export * from './trace-retention';
export * from './traces.exception';
export * from './traces.module';
export * from './traces.service';
export * from './tracing';

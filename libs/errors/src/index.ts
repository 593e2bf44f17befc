export * from './domain.exception';
export * from './request.exception';
export * from './validation-failed.exception';
export * from './error-body.dto';
export * from './error-renderer';

export * from './cli-env';
export * from './discovery';
export * from './env-file';
export * from './gates';
export * from './http';
export * from './mcp-verify';
export * from './service-accounts-api';
export * from './urls';

export * from './frames';
export * from './openapi';
export * from './run-socket';
export * from './run-socket.gateway';

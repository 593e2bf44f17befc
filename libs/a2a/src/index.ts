export * from './a2a.providers';
export * from './a2a-endpoint';
export * from './agent-card';

export * from './mcp.module';
export * from './mcp-endpoint';
export * from './mcp-http';
export * from './mcp-tool.decorator';
export * from './mcp-tool.registry';

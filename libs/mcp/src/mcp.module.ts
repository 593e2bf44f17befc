import { DynamicModule, Module, Type } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';

import { ErrorRenderer } from '@app/errors';

import { MCP_ERROR_RENDERER, McpEndpoint } from './mcp-endpoint';
import { McpToolRegistry } from './mcp-tool.registry';

export interface McpModuleOptions {
  /** How the app words errors (the same renderer as its HTTP error filter). */
  errorRenderer: Type<ErrorRenderer>;
}

/** The MCP endpoint and its tool registry; the app supplies @McpToolset providers and the HTTP route. */
@Module({})
export class McpModule {
  static forRoot(options: McpModuleOptions): DynamicModule {
    return {
      module: McpModule,
      imports: [DiscoveryModule],
      providers: [McpToolRegistry, McpEndpoint, { provide: MCP_ERROR_RENDERER, useClass: options.errorRenderer }],
      exports: [McpEndpoint, McpToolRegistry],
    };
  }
}

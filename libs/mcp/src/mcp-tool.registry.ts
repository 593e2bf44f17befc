import { toJsonSchemaCompat } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { z } from 'zod';

import { RouteScope, RouteScopes } from '@app/auth';

import { MCP_TOOL, McpToolHandler, McpToolOptions, McpToolset } from './mcp-tool.decorator';

/** A declared tool with the scope rule of the route it mirrors, resolved once at boot. */
export interface RegisteredMcpTool extends McpToolOptions {
  input: z.ZodObject;
  /** `input` as tools/list shows it, converted once here the way the SDK converts it. */
  inputJsonSchema: Record<string, unknown>;
  rule: RouteScope;
  handler: McpToolHandler;
}

/**
 * Finds every @McpTool at boot and binds it to its mirrored REST route's scope. Boot fails when a
 * tool mirrors a route that does not exist or declares no scope, so no tool runs unchecked.
 */
@Injectable()
export class McpToolRegistry implements OnModuleInit {
  private registered: RegisteredMcpTool[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly routes: RouteScopes,
  ) {}

  get tools(): readonly RegisteredMcpTool[] {
    return this.registered;
  }

  onModuleInit(): void {
    const scopes = this.routes.collect();
    const tools = this.discovery
      .getProviders({ metadataKey: McpToolset.KEY })
      .flatMap((wrapper) => this.toolsOf(wrapper.instance as object, scopes));
    const names = tools.map((tool) => tool.name);
    const duplicate = names.find((name, index) => names.indexOf(name) !== index);
    if (duplicate) {
      throw new Error(`MCP tool ${duplicate} is declared twice`);
    }
    this.registered = tools.sort((a, b) => a.name.localeCompare(b.name));
  }

  private toolsOf(instance: object, scopes: Map<string, RouteScope>): RegisteredMcpTool[] {
    const prototype = Object.getPrototypeOf(instance) as Record<string, McpToolHandler>;
    return this.scanner.getAllMethodNames(prototype).flatMap((method) => {
      const options = this.reflector.get<McpToolOptions | undefined>(MCP_TOOL, prototype[method]);
      if (!options) {
        return [];
      }
      const rule = scopes.get(options.mirrors);
      if (!rule) {
        throw new Error(`MCP tool ${options.name} mirrors ${options.mirrors}, which is not a REST route declaring @RequireScope`);
      }
      const input = options.input ?? z.object({});
      if (rule.componentParam && !(rule.componentParam in input.shape)) {
        throw new Error(
          `MCP tool ${options.name} mirrors ${options.mirrors} but takes no ${rule.componentParam} argument to narrow its scope`,
        );
      }
      const inputJsonSchema = toJsonSchemaCompat(input, { strictUnions: true, pipeStrategy: 'input' });
      return [{ ...options, input, inputJsonSchema, rule, handler: prototype[method].bind(instance) }];
    });
  }
}

import { IncomingMessage, ServerResponse } from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  ListToolsRequestSchema,
  ListToolsResult,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { Inject, Injectable } from '@nestjs/common';

import { Principal } from '@app/access';
import { Authenticator, requiredScope } from '@app/auth';
import { Env, SERVICE_VERSION } from '@app/config';

import { McpToolCall } from './mcp-tool.decorator';
import { McpToolRegistry, RegisteredMcpTool } from './mcp-tool.registry';

/** Turns an error into what a client reads: an HTTP-like status and a one-line explanation. */
export interface McpErrorRenderer {
  render(error: unknown, context: string): { status: number; detail: string };
}

export const MCP_ERROR_RENDERER = Symbol('McpErrorRenderer');

const INSTRUCTIONS =
  'Tools of a platform service that runs agents, teams and workflows. Each tool mirrors one REST route and ' +
  "needs that route's scope; the tool list shows the tools your credential may call, and a refusal names the missing scope.";

/**
 * Serves one MCP HTTP request statelessly: a fresh server and transport per request, so any api
 * replica can answer any request and nothing is kept between them (no session affinity needed).
 */
@Injectable()
export class McpEndpoint {
  constructor(
    private readonly env: Env,
    private readonly registry: McpToolRegistry,
    private readonly authenticator: Authenticator,
    @Inject(MCP_ERROR_RENDERER) private readonly errors: McpErrorRenderer,
  ) {}

  async handle(principal: Principal, request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    const server = this.serverFor(principal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  }

  private serverFor(principal: Principal): McpServer {
    const server = new McpServer(
      { name: this.env.OS_ID, version: SERVICE_VERSION },
      { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
    );
    for (const tool of this.registry.tools) {
      server.registerTool(
        tool.name,
        { description: tool.description, inputSchema: tool.input, annotations: tool.annotations, _meta: toolMeta(tool) },
        (args: Record<string, unknown>, extra) => this.call(tool, principal, args, progressOf(extra)),
      );
    }
    // registerTool promises list_changed notifications; a stateless endpoint keeps no stream to send one on.
    server.server.registerCapabilities({ tools: { listChanged: false } });
    // Every tool stays registered, so calling one the caller may not use still answers the route's scope
    // error; the list, which the SDK would build from every registered tool, shows only the callable ones.
    server.server.setRequestHandler(ListToolsRequestSchema, (): ListToolsResult => ({
      tools: this.registry.tools.filter((tool) => this.authenticator.mayCall(principal, tool.rule)).map(toolDefinition),
    }));
    return server;
  }

  /** The REST route's scope check, then the handler; every refusal or failure becomes a tool error the model can read. */
  private async call(
    tool: RegisteredMcpTool,
    principal: Principal,
    args: Record<string, unknown>,
    call: McpToolCall,
  ): Promise<CallToolResult> {
    try {
      this.authenticator.authorize(principal, requiredScope(tool.rule, args));
      return toolResult(await tool.handler(principal, args, call));
    } catch (error) {
      const { status, detail } = this.errors.render(error, `MCP tool ${tool.name}`);
      return { isError: true, content: [{ type: 'text', text: `${status}: ${detail}` }] };
    }
  }
}

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Progress notifications on the request's own stream, numbered, when the client sent a progressToken. */
function progressOf(extra: ToolExtra): McpToolCall {
  const progressToken = extra._meta?.progressToken;
  let progress = 0;
  return {
    wantsProgress: progressToken !== undefined,
    progress: (message) => {
      if (progressToken !== undefined) {
        progress += 1;
        // A client that went away makes this fail; the tool goes on and its answer is dropped the same way.
        extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => undefined);
      }
    },
  };
}

function toolMeta(tool: RegisteredMcpTool): Record<string, unknown> {
  return { 'platform/rest-route': tool.mirrors, 'platform/required-scope': tool.rule.scope };
}

/** A tools/list entry, as the SDK would write it for this registration. */
function toolDefinition(tool: RegisteredMcpTool): ListToolsResult['tools'][number] {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputJsonSchema as ListToolsResult['tools'][number]['inputSchema'],
    annotations: tool.annotations,
    _meta: toolMeta(tool),
  };
}

function toolResult(value: unknown): CallToolResult {
  const structured = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  return {
    content: [{ type: 'text', text: JSON.stringify(value ?? null, null, 2) }],
    ...(structured ? { structuredContent: structured } : {}),
  };
}

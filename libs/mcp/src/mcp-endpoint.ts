import { IncomingMessage, ServerResponse } from 'node:http';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  CancelledNotificationSchema,
  ErrorCode,
  ListToolsRequestSchema,
  ListToolsResult,
  McpError,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { Inject, Injectable } from '@nestjs/common';
import type { z } from 'zod';

import { Principal } from '@app/access';
import { Authenticator, requiredScope } from '@app/auth';
import { Env, SERVICE_VERSION } from '@app/config';
import { ErrorRenderer, ValidationFailedException, ValidationIssue } from '@app/errors';

import { refusedMessage } from './mcp-message-check';
import { McpToolCall, McpToolFailure } from './mcp-tool.decorator';
import { McpToolRegistry, RegisteredMcpTool } from './mcp-tool.registry';

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
  /**
   * Tool calls in flight on this replica, by caller and request id: a stateless endpoint receives a call's
   * `notifications/cancelled` in a request of its own, with a server of its own. Keyed by the caller too, so
   * that nobody cancels another caller's call by guessing its id.
   */
  private readonly inFlight = new Map<string, AbortController>();

  constructor(
    private readonly env: Env,
    private readonly registry: McpToolRegistry,
    private readonly authenticator: Authenticator,
    @Inject(MCP_ERROR_RENDERER) private readonly errors: ErrorRenderer,
  ) {}

  async handle(principal: Principal, request: IncomingMessage, response: ServerResponse, body: unknown): Promise<void> {
    // After the transport's first check, as the SDK orders them: a client that accepts no stream hears that first.
    const accept = request.headers.accept ?? '';
    const checked = request.method === 'POST' && accept.includes('application/json') && accept.includes('text/event-stream');
    const refused = checked ? refusedMessage(body) : null;
    if (refused) {
      response.writeHead(refused.status, { 'content-type': 'application/json' }).end(JSON.stringify(refused.body));
      return;
    }
    const server = this.serverFor(principal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  }

  /**
   * The SDK's low-level server with both tool handlers ours: the list shows only the tools the caller may
   * call, and a call's arguments are checked here, so an argument of the wrong type is refused as every
   * other bad argument is (`422: Invalid arguments: limit: ...`), not in the SDK's own words.
   */
  private serverFor(principal: Principal): Server {
    const server = new Server(
      { name: this.env.OS_ID, version: SERVICE_VERSION },
      // A stateless endpoint keeps no stream to send a list_changed notification on.
      { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
    );
    server.setRequestHandler(ListToolsRequestSchema, (): ListToolsResult => ({
      tools: this.registry.tools.filter((tool) => this.authenticator.mayCall(principal, tool.rule)).map(toolDefinition),
    }));
    // Every tool answers a call, also one the caller may not use: it gets the route's scope error.
    server.setRequestHandler(CallToolRequestSchema, async ({ params }, extra) => {
      const tool = this.registry.tools.find((candidate) => candidate.name === params.name);
      if (!tool) {
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
      }
      const key = callKey(principal, extra.requestId);
      const cancelled = new AbortController();
      this.inFlight.set(key, cancelled);
      try {
        return await this.call(tool, principal, params.arguments ?? {}, callOf(extra, AbortSignal.any([extra.signal, cancelled.signal])));
      } finally {
        if (this.inFlight.get(key) === cancelled) {
          this.inFlight.delete(key);
        }
      }
    });
    server.setNotificationHandler(CancelledNotificationSchema, ({ params }) => {
      if (params.requestId !== undefined) {
        this.inFlight.get(callKey(principal, params.requestId))?.abort();
      }
    });
    return server;
  }

  /**
   * The REST route's scope check, then the tool's argument schema (a caller without the scope learns nothing
   * of the arguments, as a guard answers before validation), then the handler; every refusal or failure
   * becomes a tool error the model can read. The scope is read from the arguments the handler gets.
   */
  private async call(
    tool: RegisteredMcpTool,
    principal: Principal,
    args: Record<string, unknown>,
    call: McpToolCall,
  ): Promise<CallToolResult> {
    try {
      const parsed = await tool.input.safeParseAsync(args);
      if (!parsed.success) {
        // A caller who may call the tool in some form (as tools/list shows it) learns what is wrong with the
        // arguments, a component id missing included; anyone else gets the route's scope error first.
        if (!this.authenticator.mayCall(principal, tool.rule)) {
          this.authenticator.authorize(principal, requiredScope(tool.rule, args));
        }
        throw new ValidationFailedException(parsed.error.issues.map(toIssue));
      }
      this.authenticator.authorize(principal, requiredScope(tool.rule, parsed.data), tool.rule.listedPerComponent);
      return toolResult(await tool.handler(principal, parsed.data, call));
    } catch (error) {
      const { status, detail } = this.errors.render(error, `MCP tool ${tool.name}`);
      return { isError: true, content: [{ type: 'text', text: `${status}: ${detail}` }] };
    }
  }
}

/** An argument the tool's schema refuses, as a 422 names a body field. */
function toIssue(issue: z.core.$ZodIssue): ValidationIssue {
  return {
    loc: ['body', ...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment))],
    msg: issue.message,
    type: issue.code,
    input: issue.input ?? null,
    ctx: {},
  };
}

type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** One caller's request id. */
function callKey(principal: Principal, requestId: string | number): string {
  return JSON.stringify([principal.kind, principal.userId, principal.serviceAccountId ?? null, principal.scheduleId ?? null, requestId]);
}

/**
 * The call as a tool sees it: progress notifications on the request's own stream, numbered, when the client sent a
 * progressToken; and `signal`, aborted when the client cancels the call or closes its request.
 */
function callOf(extra: ToolExtra, signal: AbortSignal): McpToolCall {
  const progressToken = extra._meta?.progressToken;
  let progress = 0;
  return {
    signal,
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
  if (value instanceof McpToolFailure) {
    return { ...toolResult(value.body), isError: true };
  }
  const structured = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  return {
    content: [{ type: 'text', text: JSON.stringify(value ?? null, null, 2) }],
    ...(structured ? { structuredContent: structured } : {}),
  };
}

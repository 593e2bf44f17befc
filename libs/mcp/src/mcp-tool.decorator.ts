import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { SetMetadata } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { z } from 'zod';

import type { Principal } from '@app/access';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A REST route as its controller declares it: `GET /agents/:agent_id`. */
export type RouteKey = `${HttpMethod} /${string}`;

export interface McpToolOptions {
  name: string;
  description: string;
  /**
   * The REST route this tool mirrors. Its @RequireScope is the tool's scope (narrowed by the argument
   * named like the route's component parameter), checked by the same Authenticator as REST.
   */
  mirrors: RouteKey;
  /** Arguments; the validation of the mirrored route's DTO still applies inside the handler. */
  input?: z.ZodObject;
  annotations?: ToolAnnotations;
}

/** What a tool may do besides answering: tell a client that asked for progress (a progressToken) how it goes. */
export interface McpToolCall {
  /** Whether the client asked for progress notifications. */
  readonly wantsProgress: boolean;
  /** A progress notification, when the client asked for them (a no-op otherwise); each one also restarts a client's request timeout that honours them. */
  progress(message: string): void;
  /** Aborted when the client cancels the call (`notifications/cancelled`, or it closes the request) before the answer. */
  readonly signal: AbortSignal;
}

/**
 * A tool's answer that reports a failure the model should read as one (a run that ended failed): the same body,
 * marked `isError`, so a client shows it as a failed call and not as a result to build on.
 */
export class McpToolFailure {
  constructor(readonly body: object) {}
}

/** What a tool method receives and returns: the caller, its arguments, the call (progress), and a JSON-serialisable result (or an McpToolFailure). */
export type McpToolHandler = (principal: Principal, args: Record<string, unknown>, call: McpToolCall) => unknown;

export const MCP_TOOL = 'mcp:tool';

/** Marks a provider whose @McpTool methods the registry serves at /mcp. */
export const McpToolset = DiscoveryService.createDecorator<void>();

/** Declares one MCP tool on a method of an @McpToolset() provider (see McpToolHandler). */
export function McpTool(options: McpToolOptions): MethodDecorator {
  return SetMetadata(MCP_TOOL, options);
}

import { ClientRequestSchema, ErrorCode, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';

/** The requests this server answers (initialize and ping the SDK's, the tools ours): their params are checked here. */
const ANSWERED = new Set(['initialize', 'ping', 'tools/list', 'tools/call']);

const REQUEST_SCHEMAS = new Map<string, z.ZodType>(ClientRequestSchema.options.map((schema) => [schema.shape.method.value, schema]));

/** A JSON-RPC error answered before the SDK sees the message. */
export interface McpRefusal {
  status: number;
  body: { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string } };
}

function refusal(status: number, id: string | number | null, code: number, message: string): McpRefusal {
  return { status, body: { jsonrpc: '2.0', id, error: { code, message } } };
}

/** The request's id when it has a valid one, else null (as JSON-RPC answers a request whose id it cannot tell). */
function idOf(message: unknown): string | number | null {
  const id = typeof message === 'object' && message !== null ? (message as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

/**
 * JSON-RPC's answer to a POST body the SDK would answer wrongly, or null to hand it on: valid JSON that is not a
 * JSON-RPC message (an empty batch included) is Invalid Request, where the SDK says Parse error; a request to a
 * method this server answers, with params its schema refuses, is Invalid params, where the SDK answers an
 * Internal error whose message is the schema's whole issue list.
 */
export function refusedMessage(body: unknown): McpRefusal | null {
  // No body at all: handed on, the SDK would wait for a request stream the server has already read.
  if (body === undefined) {
    return refusal(400, null, ErrorCode.ParseError, 'Parse error: the request has no body; send one JSON-RPC 2.0 message as JSON');
  }
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0) {
    return refusal(400, null, ErrorCode.InvalidRequest, 'Invalid Request: an empty batch');
  }
  const invalid = messages.findIndex((message) => !JSONRPCMessageSchema.safeParse(message).success);
  if (invalid !== -1) {
    return refusal(
      400,
      idOf(messages[invalid]),
      ErrorCode.InvalidRequest,
      'Invalid Request: not a JSON-RPC 2.0 request, notification or response',
    );
  }
  const { id, method, params } = (Array.isArray(body) ? {} : body) as { id?: string | number; method?: string; params?: unknown };
  const schema = method !== undefined && ANSWERED.has(method) ? REQUEST_SCHEMAS.get(method) : undefined;
  const checked = schema?.safeParse({ method, params });
  if (id === undefined || !checked || checked.success) {
    return null;
  }
  const issues = checked.error.issues.map((issue) => `${issue.path.map(String).join('.') || 'params'}: ${issue.message}`);
  return refusal(200, id, ErrorCode.InvalidParams, `Invalid params: ${issues.join('; ')}`);
}

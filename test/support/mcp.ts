import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A connected MCP client (initialize done) speaking Streamable HTTP to `${baseUrl}/mcp`, through the official SDK. */
export async function connectMcp(baseUrl: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'platform-tests', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : undefined,
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool; returns whether it was an error and its text content (JSON for results). */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ isError: boolean; text: string; structured: any }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return { isError: result.isError === true, text, structured: result.structuredContent };
}

/** The JSON-RPC initialize request as a raw client would POST it (for status-code assertions). */
export const INITIALIZE_REQUEST = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-probe', version: '1.0.0' } },
};

export const MCP_HEADERS = { accept: 'application/json, text/event-stream' };

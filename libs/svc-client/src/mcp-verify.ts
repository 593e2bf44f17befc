import { SERVICE_VERSION } from '@app/version';

export interface McpVerification {
  ok: boolean;
  /** Number of tools tools/list returned. */
  tools: number;
  /** HTTP status of the last MCP response seen (0 when nothing answered). */
  status_code: number;
  error: string | null;
  /**
   * The server answered 401 with a Bearer challenge naming `resource_metadata` (RFC 9728): /mcp is an
   * OAuth-protected resource and a sign-in is pending. A plain `Bearer` challenge (a token-protected
   * service refusing a missing or bad token) is not one.
   */
  oauth_challenge: boolean;
}

/** A result whose entry was never checked (skipped, or refused before it was written): nothing answered. */
export const NOT_VERIFIED: McpVerification = { ok: false, tools: 0, status_code: 0, error: 'Not verified', oauth_challenge: false };

export const MCP_VERIFY_TIMEOUT_MS = 15_000;

/**
 * Whether a WWW-Authenticate value holds a Bearer challenge with a `resource_metadata` parameter
 * (RFC 9728 section 5.1): the scheme is case-insensitive, parameters may come in any order, the value
 * quoted or not; a `resource_metadata` inside another parameter's quoted value does not count.
 */
export function namesResourceMetadata(header: string | null): boolean {
  if (!header) {
    return false;
  }
  // Blank out quoted strings first, so text inside them (an error_description, say) cannot match.
  const unquoted = header.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  let scheme = '';
  for (const part of unquoted.split(',')) {
    let param = part.trim();
    // `name=value` continues the current challenge; anything else starts one with its scheme.
    if (!/^[^\s=]+\s*=/.test(param)) {
      const [first, ...rest] = param.split(/\s+/);
      scheme = first.toLowerCase();
      param = rest.join(' ');
    }
    if (scheme === 'bearer' && /^resource_metadata\s*=\s*\S/i.test(param)) {
      return true;
    }
  }
  return false;
}

/**
 * A real MCP handshake through the official SDK client: initialize, notifications/initialized,
 * tools/list over Streamable HTTP, with the bearer token a client config holds (or none).
 */
export async function verifyMcp(mcpUrl: string, token: string | null): Promise<McpVerification> {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  let statusCode = 0;
  let challenge = false;
  let refusal: string | null = null;
  const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(MCP_VERIFY_TIMEOUT_MS) });
    statusCode = response.status;
    challenge = response.status === 401 && namesResourceMetadata(response.headers.get('www-authenticate'));
    // POSTs only: the GET that opens the optional SSE stream is refused by stateless servers (405), which the SDK ignores.
    if ((init?.method ?? 'GET').toUpperCase() === 'POST') {
      refusal = response.ok ? null : `HTTP ${response.status}${detailOf(await response.clone().text())}`;
    }
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    fetch: recordingFetch,
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : undefined,
  });
  const client = new Client({ name: 'svc', version: SERVICE_VERSION });
  try {
    await client.connect(transport, { timeout: MCP_VERIFY_TIMEOUT_MS });
    const { tools } = await client.listTools(undefined, { timeout: MCP_VERIFY_TIMEOUT_MS });
    return { ok: true, tools: tools.length, status_code: statusCode, error: null, oauth_challenge: false };
  } catch (error) {
    // The service's own words for a refusal read better than the SDK's wrapping of its body.
    const message = refusal ?? (error instanceof Error ? error.message : String(error));
    return { ok: false, tools: 0, status_code: statusCode, error: message, oauth_challenge: challenge };
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** `: <detail>` of an error body in the service's shape ({detail: string}), else nothing: another server's page is not shown. */
function detailOf(body: string): string {
  try {
    const detail = (JSON.parse(body) as { detail?: unknown }).detail;
    return typeof detail === 'string' ? `: ${detail.slice(0, 200)}` : '';
  } catch {
    return '';
  }
}

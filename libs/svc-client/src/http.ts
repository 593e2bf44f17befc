import { CliError } from '@app/cli-terminal';
import { SERVICE_VERSION } from '@app/version';

export interface HttpResult {
  status: number;
  // The parsed JSON of whichever route was called; each API wrapper reads it as that route's shape.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- typed per route once the client is generated from openapi.json
  body: any;
  text: string;
  headers: Headers;
}

export interface HttpOptions {
  credential?: string | null;
  json?: unknown;
  timeoutMs?: number;
}

export const USER_AGENT = `svc/${SERVICE_VERSION}`;

/** Discovery calls give up after 5 s, API calls after 10 s. */
export const DISCOVERY_TIMEOUT_MS = 5_000;
export const API_TIMEOUT_MS = 10_000;

/** One HTTP request; a connection failure or timeout becomes a CliError naming the URL. */
export async function httpRequest(method: string, url: string, options: HttpOptions = {}): Promise<HttpResult> {
  const headers: Record<string, string> = { 'user-agent': USER_AGENT, accept: 'application/json' };
  if (options.credential) {
    headers.authorization = `Bearer ${options.credential}`;
  }
  let body: string | undefined;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  let response: Response;
  try {
    response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(options.timeoutMs ?? API_TIMEOUT_MS) });
  } catch (error) {
    const reason = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new CliError(`Could not reach ${url}: ${reason}`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  return { status: response.status, body: parsed, text, headers: response.headers };
}

/** The `detail` of an error body as one line: strings as they are, 422 arrays as `msg (at loc)`. */
export function errorDetail(result: HttpResult): string {
  const detail = result.body?.detail;
  if (typeof detail === 'string') {
    return detail;
  }
  if (Array.isArray(detail)) {
    return detail
      .map(
        (item: { msg?: string; loc?: unknown[] }) =>
          `${item.msg ?? 'invalid'}${Array.isArray(item.loc) ? ` (at ${item.loc.join('.')})` : ''}`,
      )
      .join('; ');
  }
  return `HTTP ${result.status}`;
}

import createClient, { type Client } from 'openapi-fetch';

import { CliError } from '@app/cli-terminal';
import { SERVICE_VERSION } from '@app/version';

import type { components, paths } from './generated/openapi';

/** The api's schemas as openapi.json declares them (libs/svc-client/src/generated, `npm run openapi`). */
export type Schemas = components['schemas'];

/** A client typed by the api's OpenAPI document: paths, parameters, bodies and answers as the api serves them. */
export type ServiceClient = Client<paths>;

export const USER_AGENT = `svc/${SERVICE_VERSION}`;

/** Discovery calls give up after 5 s, API calls after 10 s. */
export const DISCOVERY_TIMEOUT_MS = 5_000;
export const API_TIMEOUT_MS = 10_000;

/** What every answer carries: the response, and the parsed body of a non-2xx one. */
export interface Answer {
  response: Response;
  error?: unknown;
}

function requestHeaders(credential: string | null | undefined): Record<string, string> {
  return { 'user-agent': USER_AGENT, accept: 'application/json', ...(credential ? { authorization: `Bearer ${credential}` } : {}) };
}

/** fetch with a timeout; a connection failure or timeout becomes a CliError naming the URL. */
async function send(request: Request, timeoutMs: number): Promise<Response> {
  try {
    return await fetch(request, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const reason = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
    throw new CliError(`Could not reach ${request.url}: ${reason}`);
  }
}

/** The api of the service at `baseUrl`, called with `credential` (openapi-fetch over the generated types). */
export function serviceClient(baseUrl: string, credential: string | null): ServiceClient {
  return createClient<paths>({ baseUrl, headers: requestHeaders(credential), fetch: (request) => send(request, API_TIMEOUT_MS) });
}

/**
 * One request to whatever answers at a URL, for discovery: the server may be an older service or not
 * this service at all, so the body is read as untrusted JSON (null when it is not JSON) and checked field by field.
 */
export async function probeRequest(
  method: string,
  url: string,
  json?: unknown,
): Promise<{ status: number; body: Record<string, unknown> | null }> {
  const headers = requestHeaders(null);
  if (json !== undefined) {
    headers['content-type'] = 'application/json';
  }
  const response = await send(
    new Request(url, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) }),
    DISCOVERY_TIMEOUT_MS,
  );
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  return { status: response.status, body: typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null };
}

/** The `detail` of an error body as one line: strings as they are, 422 arrays as `msg (at loc)`. */
export function errorDetail({ response, error }: Answer): string {
  const detail = typeof error === 'object' && error !== null ? (error as { detail?: unknown }).detail : undefined;
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
  return `HTTP ${response.status}`;
}

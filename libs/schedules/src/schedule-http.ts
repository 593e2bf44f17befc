import { Agent as HttpAgent, IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

import { JsonObject } from './schedule.entity';

/** Run statuses after which a background run does not change any more. */
const TERMINAL_RUN_STATUSES = new Set(['completed', 'failed', 'error', 'cancelled', 'paused']);
const MAX_ERROR_TEXT = 500;

export interface StartedRun {
  runId: string;
  status: string;
}

export function isTerminalRunStatus(status: string): boolean {
  return TERMINAL_RUN_STATUSES.has(status.toLowerCase());
}

/** The run an endpoint answered with (`{run_id, status}`), if its body names one. */
export function startedRun(body: string): StartedRun | null {
  try {
    const parsed = JSON.parse(body) as { run_id?: unknown; status?: unknown };
    return typeof parsed.run_id === 'string' && typeof parsed.status === 'string' ? { runId: parsed.run_id, status: parsed.status } : null;
  } catch {
    return null;
  }
}

export function runError(body: string, status: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    if (typeof parsed.error === 'string' && parsed.error) {
      return `Run ${status.toLowerCase()}: ${clip(parsed.error)}`;
    }
  } catch {
    // fall through to the generic message
  }
  return `Run ended ${status.toLowerCase()}`;
}

/** GET and DELETE carry no body; everything else sends the payload as JSON (an empty object when unset). */
export function requestBody(method: string, payload: JsonObject | null): { body?: string; headers: Record<string, string> } {
  if (method === 'GET' || method === 'DELETE') {
    return { headers: {} };
  }
  return { body: JSON.stringify(payload ?? {}), headers: { 'content-type': 'application/json' } };
}

/** Repeating these gets the same answer: a 4xx other than 408 and 429 is not retried. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

export function clip(text: string): string {
  return text.length > MAX_ERROR_TEXT ? `${text.slice(0, MAX_ERROR_TEXT)}…` : text;
}

export interface HttpAnswer {
  status: number;
  body: string;
}

/** Connections to this service are kept and reused from one fire to the next. */
const AGENTS = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/**
 * One call and its whole answer, through node:http: fetch's streams and Request objects cost about
 * three times its CPU per call, and a busy minute makes a call per schedule. Redirects are answers,
 * not followed: a schedule calls this service's own endpoints. `signal` aborts the call; the error is
 * then the signal's reason (a timeout's TimeoutError, or the shutdown's).
 */
export function send(
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
): Promise<HttpAnswer> {
  const https = url.protocol === 'https:';
  return new Promise<HttpAnswer>((resolve, reject) => {
    const fail = (error: Error) => reject(init.signal.aborted ? init.signal.reason : error);
    const request = (https ? httpsRequest : httpRequest)(
      url,
      { method: init.method, headers: init.headers, agent: https ? AGENTS.https : AGENTS.http, signal: init.signal },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', fail);
        response.on('close', () => response.complete || fail(new Error('the connection closed before the answer ended')));
      },
    );
    request.on('error', fail);
    request.end(init.body);
  });
}

/** True when `error` is an attempt's own timeout (AbortSignal.timeout's reason), not a shutdown or a failed call. */
export function isTimeout(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'TimeoutError';
}

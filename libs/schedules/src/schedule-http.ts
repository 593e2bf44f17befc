import { clipped } from '@app/validation';

import { JsonObject } from './schedule.entity';

/**
 * Run statuses at which a fire stops following its run: the run's end, a pause (a paused run may wait
 * indefinitely), and `error`, which agno's runs end in (the statuses its scheduler stops at), read in any case.
 */
const TERMINAL_RUN_STATUSES = new Set(['completed', 'failed', 'cancelled', 'paused', 'error']);
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

/** The error a JSON-RPC response carries (A2A's JSON-RPC answers them with a 200), or null when it has none. */
export function jsonRpcError(text: string): string | null {
  if (!text.includes('"jsonrpc"')) {
    return null;
  }
  try {
    const { jsonrpc, error } = JSON.parse(text) as { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown } };
    return jsonrpc === '2.0' && typeof error === 'object' && error !== null
      ? clip(`JSON-RPC error ${String(error.code)}: ${String(error.message)}`)
      : null;
  } catch {
    return null;
  }
}

export function clip(text: string): string {
  return clipped(text, MAX_ERROR_TEXT);
}

/** True when `error` is an attempt's own timeout (AbortSignal.timeout's reason), not a shutdown or a failed call. */
export function isTimeout(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'TimeoutError';
}

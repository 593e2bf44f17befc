import { describe, expect, it } from 'vitest';

import { isRetryableStatus, isTerminalRunStatus, jsonRpcError, requestBody, runError, startedRun } from './schedule-http';
import { runPath, targetOf } from './schedule-target';

describe('schedule targets', () => {
  it('derives the component of a POST to a run endpoint, and nothing otherwise', () => {
    expect(targetOf('POST', '/agents/echo-agent/runs')).toEqual({ type: 'agent', id: 'echo-agent' });
    // The router answers no trailing slash, so such a schedule targets nothing (its fires are 404s).
    expect(targetOf('POST', '/teams/echo-team/runs/')).toBeNull();
    // Spelled otherwise, the same route: the router decodes and normalises the path.
    expect(targetOf('POST', '/agents/%65cho-agent/runs')).toEqual({ type: 'agent', id: 'echo-agent' });
    expect(targetOf('POST', '/./agents/echo%2Dagent/runs')).toEqual({ type: 'agent', id: 'echo-agent' });
    expect(targetOf('POST', '/agents/%zz/runs')).toBeNull();
    // An encoded slash stays inside its segment, as the router keeps it: no route, no target.
    expect(targetOf('POST', '/agents%2Fecho-agent/runs')).toBeNull();
    expect(targetOf('POST', '/workflows/echo-workflow/runs?x=1')).toEqual({ type: 'workflow', id: 'echo-workflow' });
    expect(targetOf('GET', '/agents/echo-agent/runs')).toBeNull();
    expect(targetOf('POST', '/agents/echo-agent/runs/abc/cancel')).toBeNull();
    expect(targetOf('POST', '/robots/r2/runs')).toBeNull();
  });

  it('builds the path a run is read back from', () => {
    expect(runPath({ type: 'agent', id: 'echo-agent' }, 'r 1')).toBe('/agents/echo-agent/runs/r%201');
  });
});

describe('schedule http', () => {
  it('sends the payload as JSON except for GET and DELETE', () => {
    expect(requestBody('POST', { message: 'hi' })).toEqual({ body: '{"message":"hi"}', headers: { 'content-type': 'application/json' } });
    expect(requestBody('PUT', null)).toEqual({ body: '{}', headers: { 'content-type': 'application/json' } });
    expect(requestBody('GET', { ignored: true })).toEqual({ headers: {} });
    expect(requestBody('DELETE', null)).toEqual({ headers: {} });
  });

  it('reads the error a JSON-RPC response carries, and nothing from other bodies', () => {
    expect(jsonRpcError('{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}')).toBe(
      'JSON-RPC error -32001: Task not found',
    );
    expect(jsonRpcError('{"jsonrpc":"2.0","id":1,"result":{"kind":"task"}}')).toBeNull();
    expect(jsonRpcError('{"id":1,"error":{"code":-32601,"message":"Method not found"},"jsonrpc":"2.0"}')).toBe(
      'JSON-RPC error -32601: Method not found',
    );
    expect(jsonRpcError('{"error":"not JSON-RPC","jsonrpc":"1.0"}')).toBeNull();
    expect(jsonRpcError('{"jsonrpc": broken')).toBeNull();
    expect(jsonRpcError('data: {"jsonrpc":"2.0"}')).toBeNull();
  });

  it('retries only what retrying can fix', () => {
    expect([500, 502, 503, 408, 429].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 409, 422].some(isRetryableStatus)).toBe(false);
  });

  it('reads a started run from a body and knows when a run has ended', () => {
    expect(startedRun('{"run_id":"r1","session_id":"s","status":"queued"}')).toEqual({ runId: 'r1', status: 'queued' });
    expect(startedRun('{"status":"ok"}')).toBeNull();
    expect(startedRun('not json')).toBeNull();
    expect(['queued', 'running'].some(isTerminalRunStatus)).toBe(false);
    expect(['completed', 'failed', 'cancelled', 'paused', 'ERROR'].every(isTerminalRunStatus)).toBe(true);
    expect(runError('{"error":"boom"}', 'failed')).toBe('Run failed: boom');
    expect(runError('{}', 'CANCELLED')).toBe('Run ended cancelled');
  });
});

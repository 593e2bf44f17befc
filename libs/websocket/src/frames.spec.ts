import { describe, expect, it } from 'vitest';

import { FrameRejected, parseFrame } from './frames';

const RUN_ID = '0b9f6f64-3c1e-4a55-9d59-1d2f0c0e8a11';

function rejection(data: string): { status: number; detail: string } {
  try {
    parseFrame(data);
  } catch (error) {
    if (error instanceof FrameRejected) {
      return { status: error.status, detail: error.detail };
    }
    throw error;
  }
  throw new Error(`accepted: ${data}`);
}

describe('parseFrame', () => {
  it('reads the four actions, with plural component types accepted', () => {
    expect(parseFrame(JSON.stringify({ action: 'authenticate', token: 'svc_pat_x' }))).toEqual({
      action: 'authenticate',
      token: 'svc_pat_x',
    });
    expect(parseFrame(JSON.stringify({ action: 'run', component_type: 'agents', component_id: 'echo-agent', message: '' }))).toEqual({
      action: 'run',
      component_type: 'agent',
      component_id: 'echo-agent',
      message: '',
      session_id: undefined,
    });
    expect(parseFrame(JSON.stringify({ action: 'watch', run_id: RUN_ID }))).toEqual({ action: 'watch', run_id: RUN_ID });
    expect(parseFrame(JSON.stringify({ action: 'cancel', run_id: RUN_ID }))).toEqual({ action: 'cancel', run_id: RUN_ID });
  });

  it("keeps an action's request_id, and gives it back on the action's refusal; one too long or not a string is refused", () => {
    expect(parseFrame(JSON.stringify({ action: 'watch', run_id: RUN_ID, request_id: 'w-1' }))).toEqual({
      action: 'watch',
      run_id: RUN_ID,
      request_id: 'w-1',
    });
    try {
      parseFrame(JSON.stringify({ action: 'cancel', run_id: 'x', request_id: 'c-1' }));
      throw new Error('accepted');
    } catch (error) {
      expect(error).toMatchObject({ status: 422, detail: 'run_id must be a UUID', requestId: 'c-1' });
    }
    expect(rejection(JSON.stringify({ action: 'watch', run_id: RUN_ID, request_id: 'r'.repeat(129) }))).toEqual({
      status: 422,
      detail: "'request_id' must be at most 128 characters",
    });
    expect(rejection(JSON.stringify({ action: 'watch', run_id: RUN_ID, request_id: 7 })).status).toBe(422);
  });

  it('answers what is not a frame with 400', () => {
    expect(rejection('{not json')).toEqual({ status: 400, detail: 'A frame is a JSON object with an "action"' });
    expect(rejection('[1]').status).toBe(400);
    expect(rejection(JSON.stringify({ action: 'delete' }))).toEqual({
      status: 400,
      detail: "'action' must be authenticate, run, watch or cancel",
    });
  });

  it('names the field and the fault of a bad value with 422', () => {
    const run = { action: 'run', component_type: 'agent', component_id: 'echo-agent', message: 'hi' };
    expect(rejection(JSON.stringify({ ...run, message: 'a\u0000b' }))).toEqual({
      status: 422,
      detail: "'message' must not contain NUL (\\u0000) characters",
    });
    expect(rejection(JSON.stringify({ ...run, message: 7 }))).toEqual({ status: 422, detail: "'message' must be a string" });
    expect(rejection(JSON.stringify({ ...run, component_id: 'echo\u0000' }))).toEqual({
      status: 422,
      detail: "'component_id' must not contain NUL (\\u0000) characters",
    });
    // Half a surrogate pair: jsonb refuses it, so it is refused by name before it reaches a query.
    expect(rejection(JSON.stringify({ ...run, message: 'hi \ud83d' }))).toEqual({
      status: 422,
      detail: "'message' must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)",
    });
    expect(rejection(JSON.stringify({ ...run, component_id: '' }))).toEqual({
      status: 422,
      detail: "'component_id' must be a non-empty string",
    });
    expect(rejection(JSON.stringify({ ...run, component_type: 'robot' })).status).toBe(422);
    expect(rejection(JSON.stringify({ ...run, session_id: 'has space' })).status).toBe(422);
  });

  it('refuses a run id that is not a UUID without quoting it back', () => {
    const long = 'x'.repeat(100_000);
    expect(rejection(JSON.stringify({ action: 'watch', run_id: long }))).toEqual({ status: 422, detail: 'run_id must be a UUID' });
    expect(rejection(JSON.stringify({ action: 'cancel', run_id: `${RUN_ID}\u0000` })).status).toBe(422);
  });
});

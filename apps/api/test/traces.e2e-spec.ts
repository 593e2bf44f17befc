import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { expectErrorBody, expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { OpenAiCompatibleServer } from '../../../test/support/openai-compatible-server';
import { mintAccount, MintedAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

interface Span {
  span_id: string;
  parent_id: string | null;
  name: string;
  offset_ms: number;
  duration_ms: number;
  attributes: Record<string, unknown>;
}

const SCOPES = ['traces:read', 'agents:run'];

describe('traces', () => {
  let provider: OpenAiCompatibleServer;
  let api: RunningApi;
  let worker: RunningProcess;
  let alice: MintedAccount;
  let bob: MintedAccount;
  let databaseUrl: string;

  beforeAll(async () => {
    provider = new OpenAiCompatibleServer();
    const baseURL = await provider.listen();
    const file = join(mkdtempSync(join(tmpdir(), 'traces-')), 'agents.mjs');
    writeFileSync(
      file,
      `export default ({ modelAgent }) => [modelAgent({ id: 'assistant', instructions: 'Be brief.', model: 'standin-1', baseURL: '${baseURL}' })];`,
    );
    databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, COMPONENTS_MODULE: file, DEMO_COMPONENTS: 'true' };
    api = await startApi(env);
    worker = await startWorker(env);
    alice = await mintAccount(api.url, ROOT_KEY, { scopes: SCOPES });
    bob = await mintAccount(api.url, ROOT_KEY, { scopes: SCOPES });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await provider?.close();
  });

  /** The run's trace once it holds `spans` spans and a final status (a run's own spans come with its outcome). */
  async function traceOf(
    runId: string,
    spans: number,
    token = ROOT_KEY,
  ): Promise<{ trace_id: string; status: string; spans: Span[] } & Record<string, unknown>> {
    let trace: any = null;
    await waitFor(
      async () => {
        trace = (await call(api.url, 'GET', `/traces?run_id=${runId}`, { token })).body.data?.[0] ?? null;
        return trace !== null && trace.spans.length >= spans && ['completed', 'failed', 'cancelled'].includes(trace.status);
      },
      20_000,
      `the trace of run ${runId}`,
    );
    return trace;
  }

  const byName = (spans: Span[], name: string) => {
    const found = spans.filter((span) => span.name === name);
    expect(found, name).toHaveLength(1);
    return found[0];
  };

  it('records a background run as request, queue wait, component and model call, in order, with their parents', async () => {
    provider.next({ chunks: ['Hi', ' there'], usage: { prompt_tokens: 12, completion_tokens: 3 } });
    const posted = Date.now();
    const accepted = await call(api.url, 'POST', '/agents/assistant/runs', {
      token: alice.token,
      json: { message: 'hello', background: true },
    });
    const answered = Date.now();
    expect(accepted.status, accepted.text).toBe(202);
    const trace = await traceOf(accepted.body.run_id, 4, alice.token);

    expect(trace).toMatchObject({
      run_id: accepted.body.run_id,
      session_id: accepted.body.session_id,
      user_id: `sa:${alice.name}`,
      component_type: 'agent',
      component_id: 'assistant',
      status: 'completed',
    });
    expect(trace.trace_id).toMatch(/^[0-9a-f]{32}$/);
    // The run's, its new session's and its trace's ids are time-ordered (as UUIDv7 is): they begin with the
    // request's time in milliseconds, so that each lands at the right edge of the indexes on them.
    for (const id of [accepted.body.run_id, accepted.body.session_id, trace.trace_id]) {
      const hex = id.replaceAll('-', '');
      expect(hex[12], id).toBe('7');
      expect(parseInt(hex.slice(0, 12), 16), id).toBeGreaterThanOrEqual(posted);
      expect(parseInt(hex.slice(0, 12), 16), id).toBeLessThanOrEqual(answered);
    }
    expect(trace.duration_ms).toBeGreaterThanOrEqual(0);
    const request = byName(trace.spans, 'run.request');
    const wait = byName(trace.spans, 'run.queue_wait');
    const component = byName(trace.spans, 'run.component');
    const model = byName(trace.spans, 'model.call');
    expect(trace.spans.map((span) => span.name)).toEqual(['run.request', 'run.queue_wait', 'run.component', 'model.call']);
    expect(request.parent_id).toBeNull();
    expect(wait.parent_id).toBe(request.span_id);
    expect(component.parent_id).toBe(request.span_id);
    expect(model.parent_id).toBe(component.span_id);
    // The wait ends where the component starts; the model call runs inside the component (offsets and durations are each
    // whole milliseconds, so an end may read 1 ms late).
    expect(request.offset_ms).toBeLessThanOrEqual(wait.offset_ms);
    expect(wait.offset_ms + wait.duration_ms).toBeLessThanOrEqual(component.offset_ms + 1);
    expect(component.offset_ms).toBeLessThanOrEqual(model.offset_ms);
    expect(model.offset_ms + model.duration_ms).toBeLessThanOrEqual(component.offset_ms + component.duration_ms + 1);
    expect(model.attributes).toMatchObject({
      'run.id': accepted.body.run_id,
      'gen_ai.request.model': 'standin-1',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 3,
      model: 'standin-1',
      input_tokens: 12,
      output_tokens: 3,
      'gen_ai.response.finish_reasons': 'stop',
      finish_reason: 'stop',
    });
    expect(component.attributes).toMatchObject({ 'run.id': accepted.body.run_id, 'run.status': 'completed' });
    // The job carries when it was enqueued (where the wait starts), in whole epoch milliseconds, named so.
    const job = await call(api.url, 'GET', `/queue/jobs/${accepted.body.run_id}`, { token: ROOT_KEY });
    expect(Number.isInteger(job.body.payload.enqueued_at_ms), JSON.stringify(job.body.payload)).toBe(true);
    expect(Math.abs(job.body.payload.enqueued_at_ms - job.body.created_at * 1000)).toBeLessThan(5_000);

    const one = await call(api.url, 'GET', `/traces/${trace.trace_id}`, { token: alice.token });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(trace);
  });

  it('records a synchronous run without a queue wait, and a failed run as failed', async () => {
    const run = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'sync' } });
    const trace = await traceOf(run.body.run_id, 2);
    expect(trace.spans.map((span) => span.name)).toEqual(['run.request', 'run.component']);
    expect(trace.status).toBe('completed');
    // The request ran the run to its end: its span says how it ended, not "running".
    expect(byName(trace.spans, 'run.request').attributes['run.status']).toBe('completed');
    const failed = await call(api.url, 'POST', '/agents/fail-agent/runs', { token: ROOT_KEY, json: { message: 'x' } });
    const failedTrace = await traceOf(failed.body.run_id, 2);
    expect(failedTrace.status).toBe('failed');
    expect(byName(failedTrace.spans, 'run.request').attributes['run.status']).toBe('failed');
    const listed = await call(api.url, 'GET', '/traces?status=failed&component_id=fail-agent', { token: ROOT_KEY });
    expect(listed.body.data.map((t: { run_id: string }) => t.run_id)).toEqual([failed.body.run_id]);
  });

  it('continues the caller’s traceparent: the run’s trace is the caller’s trace, its request span the caller’s child', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    provider.next({ chunks: ['ok'] });
    const accepted = await call(api.url, 'POST', '/agents/assistant/runs', {
      token: alice.token,
      json: { message: 'traced', background: true },
      headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
    });
    expect(accepted.status, accepted.text).toBe(202);
    const trace = await traceOf(accepted.body.run_id, 4, alice.token);
    expect(trace.trace_id).toBe(traceId);
    expect(byName(trace.spans, 'run.request').parent_id).toBe(callerSpan);
    // A malformed traceparent is ignored (W3C): a new trace starts.
    const fresh = await call(api.url, 'POST', '/agents/echo-agent/runs', {
      token: alice.token,
      json: { message: 'x' },
      headers: { traceparent: 'not-a-traceparent' },
    });
    expect(fresh.status).toBe(200);
    expect((await traceOf(fresh.body.run_id, 2, alice.token)).spans[0].parent_id).toBeNull();
  });

  it('records nothing for a caller whose trace is not sampled, in the api or the worker', async () => {
    const unsampled = { traceparent: '00-6cf92f3577b34da6a3ce929d0e0e4738-00f067aa0ba902b9-00' };
    const sync = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: alice.token, json: { message: 'x' }, headers: unsampled });
    const background = await call(api.url, 'POST', '/agents/echo-agent/runs', {
      token: alice.token,
      json: { message: 'x', background: true },
      headers: unsampled,
    });
    expect([sync.status, background.status]).toEqual([200, 202]);
    const runIds = [sync.body.run_id, background.body.run_id];
    await waitFor(
      async () =>
        (await call(api.url, 'GET', `/agents/echo-agent/runs/${background.body.run_id}`, { token: alice.token })).body.status ===
        'completed',
      20_000,
      'the background run',
    );
    // A run's spans are stored with its outcome: both are finished.
    const stored = await query(
      databaseUrl,
      `SELECT trace_id FROM runs WHERE id = ANY ($1::uuid[]) AND (trace_id IS NOT NULL OR request_span IS NOT NULL OR spans IS NOT NULL)
       UNION ALL SELECT trace_id FROM trace_spans WHERE spans LIKE '%' || $2 || '%' OR spans LIKE '%' || $3 || '%'`,
      [runIds, ...runIds],
    );
    expect(stored).toEqual([]);
    for (const runId of runIds) {
      expect((await call(api.url, 'GET', `/traces?run_id=${runId}`, { token: alice.token })).body.data).toEqual([]);
    }
  });

  it('keeps the runs of another user who borrows a traceparent apart: each reads only their own runs under it', async () => {
    const traceId = '5cf92f3577b34da6a3ce929d0e0e4737';
    const post = (token: string) =>
      call(api.url, 'POST', '/agents/echo-agent/runs', {
        token,
        json: { message: 'shared', background: true },
        headers: { traceparent: `00-${traceId}-00f067aa0ba902b8-01` },
      });
    const first = await post(alice.token);
    await traceOf(first.body.run_id, 3, alice.token);
    const borrowed = await post(bob.token);
    const second = await post(alice.token);
    // Bob's request span, queue wait and component spans are stored on his run's row, under Alice's trace id...
    await waitFor(
      async () =>
        (
          await query(
            databaseUrl,
            `SELECT 1 FROM runs WHERE trace_id = $1 AND id = $2 AND request_span IS NOT NULL AND spans IS NOT NULL`,
            [traceId, borrowed.body.run_id],
          )
        ).length === 1,
      20_000,
      'the borrowed run’s spans, from the api and the worker',
    );
    // ...but her trace shows only her own two runs, whoever reads it; Bob reads his own run's, and only its spans.
    const bobs = await call(api.url, 'GET', `/traces/${traceId}`, { token: bob.token });
    expect(bobs.body).toMatchObject({ trace_id: traceId, run_id: borrowed.body.run_id, user_id: `sa:${bob.name}` });
    expect(bobs.body.spans, JSON.stringify(bobs.body.spans)).toHaveLength(3);
    expect(new Set(bobs.body.spans.map((span: Span) => span.attributes['run.id']))).toEqual(new Set([borrowed.body.run_id]));
    expect((await call(api.url, 'GET', `/traces?run_id=${borrowed.body.run_id}`, { token: alice.token })).body.data).toEqual([]);
    // Listed, each of her runs carries its own spans; read by id, her trace carries both runs'.
    for (const run of [first, second]) {
      const listed = await traceOf(run.body.run_id, 3, alice.token);
      expect(listed.trace_id).toBe(traceId);
      expect(new Set(listed.spans.map((span) => span.attributes['run.id']))).toEqual(new Set([run.body.run_id]));
    }
    for (const token of [alice.token, ROOT_KEY]) {
      const read = await call(api.url, 'GET', `/traces/${traceId}`, { token });
      const runs = new Set(read.body.spans.map((span: Span) => span.attributes['run.id']));
      expect(read.body.spans, JSON.stringify(read.body.spans)).toHaveLength(6);
      expect(runs).toEqual(new Set([first.body.run_id, second.body.run_id]));
    }
  });

  it('keeps one token’s traces invisible to another; the security key sees all; filters by session and time window', async () => {
    const mine = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: alice.token, json: { message: 'private' } });
    const trace = await traceOf(mine.body.run_id, 2, alice.token);
    expectErrorBody(await call(api.url, 'GET', `/traces/${trace.trace_id}`, { token: bob.token }), 404);
    expect((await call(api.url, 'GET', `/traces?run_id=${mine.body.run_id}`, { token: bob.token })).body.data).toEqual([]);
    const bobs = await call(api.url, 'GET', '/traces?limit=100', { token: bob.token });
    expect(bobs.body.data.every((t: { user_id: string }) => t.user_id === `sa:${bob.name}`)).toBe(true);
    expect((await call(api.url, 'GET', `/traces/${trace.trace_id}`, { token: ROOT_KEY })).body.user_id).toBe(`sa:${alice.name}`);

    const session = await call(api.url, 'GET', `/traces?session_id=${mine.body.session_id}`, { token: alice.token });
    expect(session.body.data.map((t: { trace_id: string }) => t.trace_id)).toEqual([trace.trace_id]);
    const now = Math.floor(Date.now() / 1000);
    const window = (query: string) => call(api.url, 'GET', `/traces?run_id=${mine.body.run_id}&${query}`, { token: alice.token });
    expect((await window(`started_after=${now - 120}&started_before=${now + 5}`)).body.data).toHaveLength(1);
    expect((await window(`started_after=${now + 60}`)).body.data).toHaveLength(0);
  });

  it('refuses the wrong principal and bad input', async () => {
    expectErrorBody(await call(api.url, 'GET', '/traces'), 401);
    const narrow = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run'] });
    expectErrorBody(await call(api.url, 'GET', '/traces', { token: narrow.token }), 403);
    expectErrorBody(await call(api.url, 'GET', `/traces/${'a'.repeat(32)}`, { token: narrow.token }), 403);
    expectErrorBody(await call(api.url, 'GET', '/traces/not-hex', { token: ROOT_KEY }), 404);
    expect(expectValidationBody(await call(api.url, 'GET', '/traces?status=lost', { token: ROOT_KEY }))).toContainEqual([
      'query',
      'status',
    ]);
    expect(expectValidationBody(await call(api.url, 'GET', '/traces?run_id=nope', { token: ROOT_KEY }))).toContainEqual([
      'query',
      'run_id',
    ]);
    expect(expectValidationBody(await call(api.url, 'GET', '/traces?started_after=-1', { token: ROOT_KEY }))).toContainEqual([
      'query',
      'started_after',
    ]);
    // Past what PostgreSQL can hold: a 422 naming the field, never a database error.
    for (const [path, field] of [
      ['/traces?started_before=100000000000000000000', 'started_before'],
      // Past the largest integer a JSON number holds exactly: meta.page could not answer it.
      ['/traces?page=9007199254740992', 'page'],
      ['/sessions?page=100000000000000000000', 'page'],
    ]) {
      expect(expectValidationBody(await call(api.url, 'GET', path, { token: ROOT_KEY })), path).toContainEqual(['query', field]);
    }
    // Any page short of that is valid (the spec's "1 or more"): past the end, an empty one.
    for (const page of [1_000_001, 9_007_199_254_741, Number.MAX_SAFE_INTEGER]) {
      const deep = await call(api.url, 'GET', `/sessions?page=${page}&limit=100`, { token: ROOT_KEY });
      expect(deep.status, deep.text).toBe(200);
      expect(deep.body).toMatchObject({ data: [], meta: { page, limit: 100 } });
      const jobs = await call(api.url, 'GET', `/queue/jobs?page=${page}&limit=1000`, { token: ROOT_KEY });
      expect(jobs.status, jobs.text).toBe(200);
      expect(jobs.body).toMatchObject({ data: [], meta: { page, limit: 1000 } });
    }
  });
});

import { randomUUID } from 'node:crypto';

import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { ReadableSpan, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Env } from '@app/config';

import { bootModule, ModuleOnDatabase, principals } from '../../../test/support/nest-module';
import { PostgresSpanExporter } from './postgres-span.exporter';
import { RUN_ATTRIBUTES, SPAN } from './run-span';
import { ListTracesQuery } from './trace.dto';
import { TraceRetention } from './trace-retention';
import { TracesModule } from './traces.module';
import { TracesService } from './traces.service';
import { Tracing } from './tracing';

const root = principals.securityKey();

// How stored traces read back: the run's live status, spans from the run and their batches in order, and retention.
describe('TracesService and TraceRetention', () => {
  let app: ModuleOnDatabase;
  let traces: TracesService;

  beforeAll(async () => {
    app = await bootModule({ imports: [TracesModule.forRoot('platform-test')] }, { QUEUE_RETENTION_SECONDS: '3600' });
    traces = app.get(TracesService);
  });

  afterAll(() => app.close());

  /** A background run and its trace as the api and the worker leave them, `ageSeconds` old: the request span on the run's row. */
  async function storedTrace(ageSeconds: number, jobStatus: string) {
    const runId = randomUUID();
    const traceId = randomUUID().replaceAll('-', '');
    const start = Date.now() - ageSeconds * 1000;
    // Only the request span names the run here: the others belong to it through their parent.
    const span = (id: string, parent: string | null, name: string, from: number, to: number, attributes = {}) => ({
      span_id: id,
      parent_id: parent,
      name,
      started_at: start + from,
      ended_at: start + to,
      attributes,
    });
    await app.sql(
      `INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message, created_at, trace_id, request_span)
       VALUES ($1, 's', 'agent', 'echo', 'sa:ops', true, 'queued', 'hi', to_timestamp($2 / 1000.0), $3, $4)`,
      [runId, start, traceId, JSON.stringify(span('0000000000000001', null, 'run.request', 0, 2.4, { [RUN_ATTRIBUTES.runId]: runId }))],
    );
    await app.sql(
      `INSERT INTO queue_jobs (id, job_type, component_type, component_id, session_id, status, payload) VALUES ($1, 'run', 'agent', 'echo', 's', $2, '{}')`,
      [runId, jobStatus],
    );
    await app.sql(`INSERT INTO trace_spans (trace_id, started_at, spans) VALUES ($1, to_timestamp($2 / 1000.0), $3)`, [
      traceId,
      start + 2,
      JSON.stringify([
        span('0000000000000002', '0000000000000001', 'run.queue_wait', 2, 5),
        span('0000000000000003', '0000000000000001', 'run.component', 5, 9),
      ]),
    ]);
    return { runId, traceId };
  }

  it('reads a trace with its job’s status, its request span from the run and the others from their batch, oldest first', async () => {
    const { runId, traceId } = await storedTrace(0, 'running');
    const trace = await traces.get(root, traceId);
    expect(trace).toMatchObject({ trace_id: traceId, run_id: runId, status: 'running', ended_at: null, user_id: 'sa:ops' });
    expect(trace.spans.map((span) => [span.name, span.offset_ms, span.duration_ms])).toEqual([
      ['run.request', 0, 2],
      ['run.queue_wait', 2, 3],
      ['run.component', 5, 4],
    ]);
    await app.sql(`UPDATE queue_jobs SET status = 'failed', completed_at = now() WHERE id = $1`, [runId]);
    expect(await traces.get(root, traceId)).toMatchObject({ status: 'failed', ended_at: expect.any(Number) });
    const listed = await traces.list(root, Object.assign(new ListTracesQuery(), { status: 'failed', run_id: runId }));
    expect(listed.data.map((row) => row.trace_id)).toEqual([traceId]);
  });

  it('shows the spans of the owner’s runs only: by the run each names, else (stored earlier) its nearest ancestor’s', async () => {
    const { runId, traceId } = await storedTrace(0, 'completed');
    const stranger = randomUUID();
    await app.sql(
      `INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message)
       VALUES ($1, 's2', 'agent', 'echo', 'sa:stranger', true, 'completed', 'hi')`,
      [stranger],
    );
    const now = Date.now();
    const span = (id: string, parent: string | null, name: string, attributes: Record<string, unknown> = {}) => ({
      span_id: id,
      parent_id: parent,
      name,
      started_at: now,
      ended_at: now + 1,
      attributes,
    });
    await app.sql(`INSERT INTO trace_spans (trace_id, started_at, spans) VALUES ($1, now(), $2)`, [
      traceId,
      JSON.stringify([
        // A model call stored before its component span (which may never come): it names its run itself.
        span('00000000000000a1', '00000000000000ff', 'model.call', { [RUN_ATTRIBUTES.runId]: runId }),
        // Another user's run under the same trace id, and a span of theirs under one of the owner's spans.
        span('00000000000000b1', null, 'run.request', { [RUN_ATTRIBUTES.runId]: stranger }),
        span('00000000000000b2', '0000000000000003', 'custom', { [RUN_ATTRIBUTES.runId]: stranger }),
        // A request span that made no run, naming the owner's span as its parent: it belongs to no run.
        span('00000000000000c1', '0000000000000001', 'run.request'),
      ]),
    ]);
    const shown = (await traces.get(root, traceId)).spans.map((shownSpan) => shownSpan.span_id);
    expect(shown.sort()).toEqual(['0000000000000001', '0000000000000002', '0000000000000003', '00000000000000a1']);
  });

  it('deletes traces older than QUEUE_RETENTION_SECONDS (the run keeps its row, not its trace), and keeps younger ones', async () => {
    const old = await storedTrace(7200, 'completed');
    const young = await storedTrace(60, 'completed');
    await new TraceRetention(app.get(Env), app.dataSource).deleteExpired();
    const left = await app.sql<{ trace_id: string }>(
      `SELECT trace_id FROM runs WHERE trace_id = ANY ($1) UNION ALL SELECT trace_id FROM trace_spans WHERE trace_id = ANY ($1)`,
      [[old.traceId, young.traceId]],
    );
    expect(left.map((row) => row.trace_id)).toEqual([young.traceId, young.traceId]);
    const [run] = await app.sql<{ request_span: string | null }>(`SELECT request_span FROM runs WHERE id = $1`, [old.runId]);
    expect(run).toEqual({ request_span: null });
    await expect(traces.get(root, old.traceId)).rejects.toThrow(`Trace '${old.traceId}' not found`);
  });

  it('stores what the exporter is handed by trace, in one row per trace and batch, leaving request spans to their runs', async () => {
    const ended: ReadableSpan[] = [];
    const tracer = new TracerProvider({
      spanProcessors: [
        { onStart: () => undefined, onEnd: (span) => ended.push(span), forceFlush: async () => {}, shutdown: async () => {} },
      ],
    }).getTracer('test');
    const exporter = new PostgresSpanExporter(app.dataSource);
    const write = (spans: ReadableSpan[]) =>
      new Promise<void>((resolve, reject) => exporter.export(spans, (result) => (result.error ? reject(result.error) : resolve())));

    // An exported request span (OTLP set) with a component span under it, and a component's own span that
    // happens to share the request span's name.
    const request = tracer.startSpan(SPAN.request, { kind: SpanKind.SERVER });
    const parent = trace.setSpan(ROOT_CONTEXT, request);
    tracer.startSpan(SPAN.component, {}, parent).end();
    tracer.startSpan(SPAN.request, {}, parent).end();
    request.end();
    const other = tracer.startSpan('custom');
    other.end();
    await write(ended.splice(0));

    const rows = await app.sql<{ trace_id: string; spans: string }>(`SELECT trace_id, spans FROM trace_spans WHERE trace_id = ANY ($1)`, [
      [request.spanContext().traceId, other.spanContext().traceId],
    ]);
    const stored = new Map(rows.map((row) => [row.trace_id, (JSON.parse(row.spans) as { name: string }[]).map((span) => span.name)]));
    expect(stored).toEqual(
      new Map([
        [request.spanContext().traceId, [SPAN.component, SPAN.request]],
        [other.spanContext().traceId, ['custom']],
      ]),
    );
  });

  it('starts a request span: a new trace, or the caller’s when sampled; none for a caller that records nothing', () => {
    const tracing = app.get(Tracing);
    const fresh = tracing.startRequest()!;
    expect(fresh.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const caller = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7';
    const continued = tracing.startRequest(`${caller}-01`)!;
    expect(continued.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    // Stored, it keeps what the run's row does not say: ids and times.
    const stored = continued.stored();
    expect(stored).toEqual({
      span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
      parent_id: '00f067aa0ba902b7',
      started_at: expect.any(Number),
      ended_at: expect.any(Number),
    });
    expect(stored.ended_at).toBeGreaterThanOrEqual(stored.started_at);
    expect(continued.stored()).toEqual(stored);
    expect(tracing.startRequest(`${caller}-00`)).toBeUndefined();
    // A run with no request span joins the caller's trace as the caller's span names it, nothing more of the header.
    expect(tracing.callerTraceparent(`${caller}-00`)).toBe(`${caller}-00`);
    expect(tracing.callerTraceparent(`${caller}-03`)).toBe(`${caller}-01`);
    expect(tracing.callerTraceparent('00-xyz')).toBeUndefined();
    expect(
      new Tracing(Object.assign(new Env(), { TRACES_ENABLED: false }), app.dataSource, 'test').callerTraceparent(`${caller}-01`),
    ).toBeUndefined();
    // A malformed caller header starts a trace of its own.
    expect(tracing.startRequest('00-xyz')!.stored().parent_id).toBeNull();
  });
});

import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Env } from '@app/config';
import { DatabaseHealth } from '@app/health';

import { bootModule, ModuleOnDatabase, principals } from '../../../test/support/nest-module';
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

  /** A background run and its trace as the api and the worker leave them, `ageSeconds` old: request span and the worker's spans on the run's row. */
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
      `INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message, created_at, trace_id,
                         request_span, spans)
       VALUES ($1, 's', 'agent', 'echo', 'sa:ops', true, 'queued', 'hi', to_timestamp($2 / 1000.0), $3, $4, $5)`,
      [
        runId,
        start,
        traceId,
        JSON.stringify(span('0000000000000001', null, 'run.request', 0, 2.4, { [RUN_ATTRIBUTES.runId]: runId })),
        // One execution's spans, as the worker's outcome write appends them.
        [
          JSON.stringify([
            span('0000000000000002', '0000000000000001', 'run.queue_wait', 2, 5),
            span('0000000000000003', '0000000000000001', 'run.component', 5, 9),
          ]),
        ],
      ],
    );
    await app.sql(
      `INSERT INTO queue_jobs (id, job_type, component_type, component_id, session_id, status, payload) VALUES ($1, 'run', 'agent', 'echo', 's', $2, '{}')`,
      [runId, jobStatus],
    );
    return { runId, traceId };
  }

  /** Spans as a release before runs kept their own stored them: a batch row of trace_spans. */
  const storeBatch = (traceId: string, startedAt: number, spans: object[]) =>
    app.sql(`INSERT INTO trace_spans (trace_id, started_at, spans) VALUES ($1, to_timestamp($2 / 1000.0), $3)`, [
      traceId,
      startedAt,
      JSON.stringify(spans),
    ]);

  it('reads a trace with its job’s status and the spans its run’s row keeps, oldest first', async () => {
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
    await storeBatch(traceId, now, [
      // A model call stored before its component span (which may never come): it names its run itself.
      span('00000000000000a1', '00000000000000ff', 'model.call', { [RUN_ATTRIBUTES.runId]: runId }),
      // Another user's run under the same trace id, and a span of theirs under one of the owner's spans.
      span('00000000000000b1', null, 'run.request', { [RUN_ATTRIBUTES.runId]: stranger }),
      span('00000000000000b2', '0000000000000003', 'custom', { [RUN_ATTRIBUTES.runId]: stranger }),
      // A request span that made no run, naming the owner's span as its parent: it belongs to no run.
      span('00000000000000c1', '0000000000000001', 'run.request'),
    ]);
    const shown = (await traces.get(root, traceId)).spans.map((shownSpan) => shownSpan.span_id);
    expect(shown.sort()).toEqual(['0000000000000001', '0000000000000002', '0000000000000003', '00000000000000a1']);
  });

  it('deletes traces older than QUEUE_RETENTION_SECONDS (the run keeps its row, not its trace), and keeps younger ones', async () => {
    const old = await storedTrace(7200, 'completed');
    const young = await storedTrace(60, 'completed');
    await storeBatch(old.traceId, Date.now() - 7_200_000, [{ name: 'custom' }]);
    await storeBatch(young.traceId, Date.now() - 60_000, [{ name: 'custom' }]);
    const database = new DatabaseHealth(app.dataSource);
    await new TraceRetention(app.get(Env), app.dataSource, database).deleteExpired();
    await database.onApplicationShutdown();
    const left = await app.sql<{ trace_id: string }>(
      `SELECT trace_id FROM runs WHERE trace_id = ANY ($1) UNION ALL SELECT trace_id FROM trace_spans WHERE trace_id = ANY ($1)`,
      [[old.traceId, young.traceId]],
    );
    expect(left.map((row) => row.trace_id)).toEqual([young.traceId, young.traceId]);
    const [run] = await app.sql(`SELECT request_span, spans FROM runs WHERE id = $1`, [old.runId]);
    expect(run).toEqual({ request_span: null, spans: null });
    await expect(traces.get(root, old.traceId)).rejects.toThrow(`Trace '${old.traceId}' not found`);
  });

  it('records a run’s spans as children of its request span, or nothing when tracing is off or its request was not traced', () => {
    const tracing = app.get(Tracing);
    const request = tracing.startRequest()!;
    const trace = tracing.runTrace(request.traceparent);
    const wait = trace.start(SPAN.queueWait, { startTime: Date.now() - 40, attributes: { 'job.attempt': 1 } });
    wait.end();
    wait.end();
    const component = trace.start(SPAN.component);
    const step = trace.start('step', { parent: component, attributes: { n: 1 } });
    step.setAttributes({ n: 2, done: true });
    step.fail(new Error('step broke'));
    step.end();
    trace.start('never ended', { parent: component });
    component.end();

    const stored = trace.storedSpans();
    expect(stored.map((span) => [span.name, span.parent_id])).toEqual([
      [SPAN.queueWait, request.spanId],
      ['step', component.spanId],
      [SPAN.component, request.spanId],
    ]);
    expect(new Set(stored.map((span) => span.span_id)).size).toBe(3);
    expect(stored.every((span) => /^[0-9a-f]{16}$/.test(span.span_id) && span.ended_at >= span.started_at)).toBe(true);
    expect(stored[0].ended_at - stored[0].started_at).toBeGreaterThanOrEqual(40);
    expect(stored[1].attributes).toEqual({
      n: 2,
      done: true,
      'otel.status_code': 'ERROR',
      'otel.status_description': 'step broke',
    });

    const caller = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7';
    const none = [
      tracing.runTrace(undefined),
      tracing.runTrace(`${caller}-00`),
      tracing.runTrace('00-xyz'),
      new Tracing(Object.assign(new Env(), { TRACES_ENABLED: false }), 'test').runTrace(request.traceparent),
    ];
    for (const unrecorded of none) {
      unrecorded.start(SPAN.component).end();
      expect(unrecorded.storedSpans()).toEqual([]);
    }
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
    expect(new Tracing(Object.assign(new Env(), { TRACES_ENABLED: false }), 'test').startRequest()).toBeUndefined();
    // A malformed caller header starts a trace of its own.
    expect(tracing.startRequest('00-xyz')!.stored().parent_id).toBeNull();
  });
});

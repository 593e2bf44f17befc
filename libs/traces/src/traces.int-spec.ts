import { randomUUID } from 'node:crypto';

import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
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

const root = principals.securityKey();

// How stored traces read back: the run's live status, spans from separate batches in order, and retention.
describe('TracesService and TraceRetention', () => {
  let app: ModuleOnDatabase;
  let traces: TracesService;

  beforeAll(async () => {
    app = await bootModule({ imports: [TracesModule.forRoot('platform-test')] }, { QUEUE_RETENTION_SECONDS: '3600' });
    traces = app.get(TracesService);
  });

  afterAll(() => app.close());

  /** A background run and its trace as the api's and the worker's batches leave them, `ageSeconds` old. */
  async function storedTrace(ageSeconds: number, jobStatus: string) {
    const runId = randomUUID();
    const traceId = randomUUID().replaceAll('-', '');
    const start = Date.now() - ageSeconds * 1000;
    await app.sql(
      `INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message)
       VALUES ($1, 's', 'agent', 'echo', 'sa:ops', true, 'queued', 'hi')`,
      [runId],
    );
    await app.sql(
      `INSERT INTO queue_jobs (id, job_type, component_type, component_id, session_id, status, payload) VALUES ($1, 'run', 'agent', 'echo', 's', $2, '{}')`,
      [runId, jobStatus],
    );
    await app.sql(
      `INSERT INTO traces (trace_id, run_id, session_id, user_id, component_type, component_id, started_at)
       VALUES ($1, $2, 's', 'sa:ops', 'agent', 'echo', to_timestamp($3 / 1000.0))`,
      [traceId, runId, start],
    );
    // The worker's batch first (it can land before the api's), then the api's. Only the request span
    // names the run here: the others belong to it through their parent.
    const span = (id: string, parent: string | null, name: string, from: number, to: number, attributes = {}) => ({
      span_id: id,
      parent_id: parent,
      name,
      started_at: start + from,
      ended_at: start + to,
      attributes,
    });
    await app.sql(
      `INSERT INTO trace_spans (trace_id, started_at, spans) VALUES ($1, to_timestamp($2 / 1000.0), $3), ($1, to_timestamp($4 / 1000.0), $5)`,
      [
        traceId,
        start + 2,
        JSON.stringify([
          span('0000000000000002', '0000000000000001', 'run.queue_wait', 2, 5),
          span('0000000000000003', '0000000000000001', 'run.component', 5, 9),
        ]),
        start,
        JSON.stringify([span('0000000000000001', null, 'run.request', 0, 2.4, { [RUN_ATTRIBUTES.runId]: runId })]),
      ],
    );
    return { runId, traceId };
  }

  it('reads a trace with its job’s status and its spans from both batches, oldest first', async () => {
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

  it('deletes traces and their spans older than QUEUE_RETENTION_SECONDS, and keeps younger ones', async () => {
    const old = await storedTrace(7200, 'completed');
    const young = await storedTrace(60, 'completed');
    await new TraceRetention(app.get(Env), app.dataSource).deleteExpired();
    const left = await app.sql<{ trace_id: string }>(
      `SELECT trace_id FROM traces WHERE trace_id = ANY ($1) UNION ALL SELECT trace_id FROM trace_spans WHERE trace_id = ANY ($1)`,
      [[old.traceId, young.traceId]],
    );
    expect(left.map((row) => row.trace_id)).toEqual([young.traceId, young.traceId, young.traceId]);
  });

  it('stores what the exporter is handed: the worker’s batch before the api’s, one summary per run, nothing for a refused request', async () => {
    const ended: ReadableSpan[] = [];
    const tracer = new TracerProvider({
      spanProcessors: [
        { onStart: () => undefined, onEnd: (span) => ended.push(span), forceFlush: async () => {}, shutdown: async () => {} },
      ],
    }).getTracer('test');
    const exporter = new PostgresSpanExporter(app.dataSource);
    const write = (spans: ReadableSpan[]) =>
      new Promise<void>((resolve, reject) => exporter.export(spans, (result) => (result.error ? reject(result.error) : resolve())));
    const runOf = async () => {
      const id = randomUUID();
      await app.sql(
        `INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message) VALUES ($1, 's', 'agent', 'echo', 'sa:ops', false, 'completed', 'hi')`,
        [id],
      );
      return id;
    };
    const request = (runId: string | null, parent = ROOT_CONTEXT) => {
      const span = tracer.startSpan(SPAN.request, {}, parent);
      if (runId) {
        span.setAttributes({
          [RUN_ATTRIBUTES.runId]: runId,
          [RUN_ATTRIBUTES.sessionId]: 's',
          [RUN_ATTRIBUTES.userId]: 'sa:ops',
          [RUN_ATTRIBUTES.componentType]: 'agent',
          [RUN_ATTRIBUTES.componentId]: 'echo',
        });
      }
      span.end();
      return span;
    };

    // A run's trace: the worker's component span is written before the api's request span.
    const first = await runOf();
    const callerSpan = request(first);
    tracer.startSpan(SPAN.component, {}, trace.setSpan(ROOT_CONTEXT, callerSpan)).end();
    const [requestSpan, componentSpan] = ended.splice(0);
    await write([componentSpan]);
    await write([requestSpan]);
    // A second run continuing the same caller trace, and a request refused before it made a run.
    const second = await runOf();
    request(second, trace.setSpan(ROOT_CONTEXT, callerSpan));
    const refused = request(null);
    await write(ended.splice(0));

    const traceId = callerSpan.spanContext().traceId;
    const stored = await traces.get(root, traceId);
    expect(stored).toMatchObject({ run_id: first, status: 'completed' });
    expect(stored.spans.map((span) => span.name).sort()).toEqual([SPAN.component, SPAN.request, SPAN.request]);
    expect(stored.spans[0]).toMatchObject({ name: SPAN.request, parent_id: null, offset_ms: 0 });
    // The second run has its own summary under the same trace id, listed with its own span only; read by
    // id, the trace is its first run's, with the spans of both.
    const summaries = await app.sql<{ run_id: string }>(`SELECT run_id FROM traces WHERE trace_id = $1`, [traceId]);
    expect(summaries.map((row) => row.run_id).sort()).toEqual([first, second].sort());
    const listed = await traces.list(root, Object.assign(new ListTracesQuery(), { run_id: second }));
    expect(listed.data.map((row) => [row.trace_id, row.run_id, row.spans.map((span) => span.name)])).toEqual([
      [traceId, second, [SPAN.request]],
    ]);
    const refusedRows = await app.sql(
      `SELECT trace_id FROM trace_spans WHERE trace_id = $1 UNION ALL SELECT trace_id FROM traces WHERE trace_id = $1`,
      [refused.spanContext().traceId],
    );
    expect(refusedRows).toEqual([]);
  });
});

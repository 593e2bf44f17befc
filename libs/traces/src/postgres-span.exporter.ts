import { SpanStatusCode } from '@opentelemetry/api';
import { ExportResult, ExportResultCode, hrTimeToMilliseconds } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { DataSource } from 'typeorm';

import { RUN_ATTRIBUTES, SPAN } from './run-span';
import type { StoredSpan } from './trace.entity';

/** A run whose request span is in the batch: its trace's summary (GET /traces), one per run. */
interface RunSummary {
  id: string;
  sessionId: string;
  userId: string | null;
  componentType: string;
  componentId: string;
  startedAt: number;
}

/** One trace's spans in a batch, and the runs whose request spans are among them. */
interface TraceBatch {
  traceId: string;
  startedAt: number;
  spans: StoredSpan[];
  runs: RunSummary[];
}

/**
 * A batch in one statement: a row of spans (a JSON array, stored as text) per trace, and the summaries
 * of the runs whose request spans are in it. A caller's traceparent may carry several runs, each with
 * its own summary. Start times travel as epoch milliseconds, converted by PostgreSQL. The conflict
 * names no key, so a batch writes alike before and after summaries moved from the trace id to the run.
 */
const WRITE_BATCH = `
  WITH summaries AS (
    INSERT INTO traces (trace_id, run_id, session_id, user_id, component_type, component_id, started_at)
    SELECT trace_id, run_id, session_id, user_id, component_type, component_id, to_timestamp(started_ms / 1000)
      FROM unnest($4::varchar[], $5::uuid[], $6::varchar[], $7::varchar[], $8::varchar[], $9::varchar[], $10::float8[])
        AS s(trace_id, run_id, session_id, user_id, component_type, component_id, started_ms)
    ON CONFLICT DO NOTHING
  )
  INSERT INTO trace_spans (trace_id, started_at, spans)
  SELECT trace_id, to_timestamp(started_ms / 1000), spans FROM unnest($1::varchar[], $2::float8[], $3::text[]) AS b(trace_id, started_ms, spans)`;

/**
 * Stores finished spans in PostgreSQL. Driven by OpenTelemetry's BatchSpanProcessor, so spans are
 * written in batches from a timer, never on the request's path.
 */
export class PostgresSpanExporter implements SpanExporter {
  constructor(private readonly dataSource: DataSource) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.write(spans).then(
      () => done({ code: ExportResultCode.SUCCESS }),
      (error: unknown) => done({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) }),
    );
  }

  async shutdown(): Promise<void> {}

  private async write(spans: ReadableSpan[]): Promise<void> {
    const traces = byTrace(spans);
    if (traces.length === 0) {
      return;
    }
    const runs = traces.flatMap(({ traceId, runs }) => runs.map((run) => ({ traceId, ...run })));
    await this.dataSource.query(WRITE_BATCH, [
      traces.map((trace) => trace.traceId),
      traces.map((trace) => trace.startedAt),
      traces.map((trace) => JSON.stringify(trace.spans)),
      runs.map((run) => run.traceId),
      runs.map((run) => run.id),
      runs.map((run) => run.sessionId),
      runs.map((run) => run.userId),
      runs.map((run) => run.componentType),
      runs.map((run) => run.componentId),
      runs.map((run) => run.startedAt),
    ]);
  }
}

/**
 * A failed span's attributes say so, under the names OpenTelemetry gives status in formats without a status
 * field (Zipkin's tags): `otel.status_code` and `otel.status_description`.
 */
function withStatus({ attributes, status }: ReadableSpan): ReadableSpan['attributes'] {
  return status.code === SpanStatusCode.ERROR
    ? { ...attributes, 'otel.status_code': 'ERROR', ...(status.message ? { 'otel.status_description': status.message } : {}) }
    : attributes;
}

/**
 * The batch's spans by trace. A request refused before it made a run (its request span names no run)
 * has nothing to show in GET /traces: its spans are left to the OTLP exporter, if one is set.
 */
function byTrace(spans: ReadableSpan[]): TraceBatch[] {
  const traces = new Map<string, TraceBatch>();
  const refused = new Set<string>();
  for (const span of spans) {
    const traceId = span.spanContext().traceId;
    const { attributes } = span;
    const startedAt = hrTimeToMilliseconds(span.startTime);
    let trace = traces.get(traceId);
    if (!trace) {
      trace = { traceId, startedAt, spans: [], runs: [] };
      traces.set(traceId, trace);
    }
    trace.startedAt = Math.min(trace.startedAt, startedAt);
    if (span.name === SPAN.request) {
      const runId = attributes[RUN_ATTRIBUTES.runId];
      const userId = attributes[RUN_ATTRIBUTES.userId];
      if (typeof runId !== 'string') {
        refused.add(traceId);
      } else {
        trace.runs.push({
          id: runId,
          sessionId: String(attributes[RUN_ATTRIBUTES.sessionId]),
          userId: typeof userId === 'string' ? userId : null,
          componentType: String(attributes[RUN_ATTRIBUTES.componentType]),
          componentId: String(attributes[RUN_ATTRIBUTES.componentId]),
          startedAt,
        });
      }
    }
    trace.spans.push({
      span_id: span.spanContext().spanId,
      parent_id: span.parentSpanContext?.spanId ?? null,
      name: span.name,
      started_at: startedAt,
      ended_at: hrTimeToMilliseconds(span.endTime),
      attributes: withStatus(span),
    });
  }
  return [...traces.values()].filter((trace) => trace.runs.length > 0 || !refused.has(trace.traceId));
}

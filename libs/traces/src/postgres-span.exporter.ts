import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { ExportResult, ExportResultCode, hrTimeToMilliseconds } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { DataSource } from 'typeorm';

import { SPAN } from './run-span';
import { storedAttributes, StoredSpan } from './trace.entity';

/** One trace's spans in a batch. */
interface TraceBatch {
  traceId: string;
  startedAt: number;
  spans: StoredSpan[];
}

/** A batch in one statement: a row of spans (a JSON array, stored as text) per trace. Start times travel as epoch milliseconds. */
const WRITE_BATCH = `
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
    if (traces.length > 0) {
      await this.dataSource.query(WRITE_BATCH, [
        traces.map((trace) => trace.traceId),
        traces.map((trace) => trace.startedAt),
        traces.map((trace) => JSON.stringify(trace.spans)),
      ]);
    }
  }
}

/**
 * The batch's spans by trace. A request span is left out: it is stored on its run's row (RequestSpan),
 * and one that made no run (refused) has nothing to show in GET /traces; with OTLP set it is exported.
 */
function byTrace(spans: ReadableSpan[]): TraceBatch[] {
  const traces = new Map<string, TraceBatch>();
  for (const span of spans) {
    if (span.kind === SpanKind.SERVER && span.name === SPAN.request) {
      continue;
    }
    const traceId = span.spanContext().traceId;
    const startedAt = hrTimeToMilliseconds(span.startTime);
    let trace = traces.get(traceId);
    if (!trace) {
      trace = { traceId, startedAt, spans: [] };
      traces.set(traceId, trace);
    }
    trace.startedAt = Math.min(trace.startedAt, startedAt);
    trace.spans.push({
      span_id: span.spanContext().spanId,
      parent_id: span.parentSpanContext?.spanId ?? null,
      name: span.name,
      started_at: startedAt,
      ended_at: hrTimeToMilliseconds(span.endTime),
      attributes: storedAttributes(span.attributes, span.status.code === SpanStatusCode.ERROR ? span.status : null),
    });
  }
  return [...traces.values()];
}

import type { HrTime } from '@opentelemetry/api';
import { ExportResult, ExportResultCode, hrTimeToMilliseconds } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { DataSource } from 'typeorm';

import { RUN_ATTRIBUTES, TERMINAL_RUN_STATUSES } from './run-span';

interface Summary {
  traceId: string;
  runId: string;
  sessionId: string;
  userId: string | null;
  componentType: string;
  componentId: string;
  status: string;
  startedAt: number;
  endedAt: number;
}

/**
 * A batch of spans and the summaries of their traces in one statement. A summary's terminal status is
 * never replaced by an earlier one arriving late (the api's `queued` after the worker's `completed`).
 */
const WRITE_BATCH = `
  WITH spans AS (
    INSERT INTO trace_spans (trace_id, span_id, parent_id, name, started_at, ended_at, attributes)
    SELECT * FROM unnest($1::varchar[], $2::varchar[], $3::varchar[], $4::varchar[], $5::timestamptz[], $6::timestamptz[], $7::jsonb[])
    ON CONFLICT DO NOTHING
  )
  INSERT INTO traces (trace_id, run_id, session_id, user_id, component_type, component_id, status, started_at, ended_at)
  SELECT * FROM unnest($8::varchar[], $9::uuid[], $10::varchar[], $11::varchar[], $12::varchar[], $13::varchar[], $14::varchar[],
                       $15::timestamptz[], $16::timestamptz[])
  ON CONFLICT (trace_id) DO UPDATE SET
    status = CASE WHEN traces.status = ANY ($17::varchar[]) AND NOT EXCLUDED.status = ANY ($17::varchar[])
                  THEN traces.status ELSE EXCLUDED.status END,
    started_at = LEAST(traces.started_at, EXCLUDED.started_at),
    ended_at = GREATEST(traces.ended_at, EXCLUDED.ended_at)`;

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
    const summaries = summarize(spans);
    const column = <T>(pick: (span: ReadableSpan) => T) => spans.map(pick);
    const summary = <T>(pick: (row: Summary) => T) => summaries.map(pick);
    await this.dataSource.query(WRITE_BATCH, [
      column((span) => span.spanContext().traceId),
      column((span) => span.spanContext().spanId),
      column((span) => span.parentSpanContext?.spanId ?? null),
      column((span) => span.name),
      column((span) => microsecondsOf(span.startTime)),
      column((span) => microsecondsOf(span.endTime)),
      column((span) => JSON.stringify(span.attributes)),
      summary((row) => row.traceId),
      summary((row) => row.runId),
      summary((row) => row.sessionId),
      summary((row) => row.userId),
      summary((row) => row.componentType),
      summary((row) => row.componentId),
      summary((row) => row.status),
      summary((row) => isoOf(row.startedAt)),
      summary((row) => isoOf(row.endedAt)),
      TERMINAL_RUN_STATUSES,
    ]);
  }
}

/** One summary per trace in the batch, from its run spans (those naming a run): earliest start, latest end, last status. */
function summarize(spans: ReadableSpan[]): Summary[] {
  const byTrace = new Map<string, Summary>();
  for (const span of spans) {
    const attributes = span.attributes;
    const runId = attributes[RUN_ATTRIBUTES.runId];
    if (typeof runId !== 'string') {
      continue;
    }
    const traceId = span.spanContext().traceId;
    const startedAt = hrTimeToMilliseconds(span.startTime);
    const endedAt = hrTimeToMilliseconds(span.endTime);
    const status = String(attributes[RUN_ATTRIBUTES.status] ?? 'queued');
    const known = byTrace.get(traceId);
    if (known) {
      known.startedAt = Math.min(known.startedAt, startedAt);
      known.endedAt = Math.max(known.endedAt, endedAt);
      if (TERMINAL_RUN_STATUSES.includes(status) || !TERMINAL_RUN_STATUSES.includes(known.status)) {
        known.status = status;
      }
      continue;
    }
    byTrace.set(traceId, {
      traceId,
      runId,
      sessionId: String(attributes[RUN_ATTRIBUTES.sessionId]),
      userId: typeof attributes[RUN_ATTRIBUTES.userId] === 'string' ? (attributes[RUN_ATTRIBUTES.userId] as string) : null,
      componentType: String(attributes[RUN_ATTRIBUTES.componentType]),
      componentId: String(attributes[RUN_ATTRIBUTES.componentId]),
      status,
      startedAt,
      endedAt,
    });
  }
  return [...byTrace.values()];
}

/** PostgreSQL keeps microseconds: enough to order a span and the child it starts at once. */
function microsecondsOf([seconds, nanoseconds]: HrTime): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}.${String(Math.floor(nanoseconds / 1000)).padStart(6, '0')}Z`;
}

function isoOf(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

import { ViewColumn, ViewEntity } from 'typeorm';

/**
 * One span as it is stored, in JSON arrays (on its run's row, one per execution; in trace_spans, as earlier
 * releases wrote them): times are epoch milliseconds, fractions kept.
 */
export interface StoredSpan {
  span_id: string;
  parent_id: string | null;
  name: string;
  started_at: number;
  ended_at: number;
  attributes: Record<string, unknown>;
}

/**
 * A span's attributes as stored: a failed span's say so under the names OpenTelemetry gives status in
 * formats without a status field (Zipkin's tags), `otel.status_code` and `otel.status_description`.
 */
export function storedAttributes(attributes: Record<string, unknown>, failure: { message?: string } | null): Record<string, unknown> {
  return failure === null
    ? attributes
    : { ...attributes, 'otel.status_code': 'ERROR', ...(failure.message ? { 'otel.status_description': failure.message } : {}) };
}

/**
 * One run's trace, as GET /traces lists it: the traced run's row, with the run's status and end (its
 * job's while one exists). The view comes from a migration, so TypeORM only reads it.
 */
@ViewEntity({ name: 'trace_summaries', synchronize: false })
export class TraceEntity {
  /** W3C trace id: 32 lowercase hex digits. */
  @ViewColumn({ name: 'trace_id' })
  traceId!: string;

  @ViewColumn({ name: 'run_id' })
  runId!: string;

  @ViewColumn({ name: 'session_id' })
  sessionId!: string;

  @ViewColumn({ name: 'user_id' })
  userId!: string | null;

  @ViewColumn({ name: 'component_type' })
  componentType!: string;

  @ViewColumn({ name: 'component_id' })
  componentId!: string;

  /** The run's status: queued, running, then completed, failed or cancelled. */
  @ViewColumn()
  status!: string;

  @ViewColumn({ name: 'started_at' })
  startedAt!: Date;

  @ViewColumn({ name: 'ended_at' })
  endedAt!: Date | null;
}

import { Attributes, Span, SpanStatusCode } from '@opentelemetry/api';

import { SPAN } from './run-span';
import { storedAttributes, StoredSpan } from './trace.entity';

/** Epoch milliseconds with fractions, on the clock OpenTelemetry's spans use (Date.now drifts from it). */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * A run request's span. It is stored on its run's row (see `stored()`), not in the span batches: the
 * row is written anyway, where a span of its own cost a background POST two more rows. Its trace
 * continues elsewhere through `traceparent` (the job, the component's spans). When spans are exported
 * over OTLP, `exported` is the SDK's span with the same ids and start, ended with the same end.
 */
export class RequestSpan {
  private readonly attributes: Attributes = {};
  private failure: { message: string } | null = null;
  private endedAt: number | null = null;

  constructor(
    readonly traceId: string,
    readonly spanId: string,
    /** The caller's span, when its traceparent came with the request. */
    private readonly parentId: string | null,
    private readonly startedAt: number,
    private readonly exported: Span | null,
  ) {}

  /** When the request began, for a run stamped with it (the trace's start in GET /traces). */
  get startTime(): Date {
    return new Date(this.startedAt);
  }

  /** When `stored()` ended the span (epoch milliseconds), if it has. */
  get endTime(): number | null {
    return this.endedAt;
  }

  /** W3C `traceparent` (version 00, sampled) naming this span as the parent. */
  get traceparent(): string {
    return `00-${this.traceId}-${this.spanId}-01`;
  }

  setAttributes(attributes: Attributes): void {
    Object.assign(this.attributes, attributes);
  }

  fail(error: unknown): void {
    this.failure = { message: error instanceof Error ? error.message : String(error) };
  }

  /**
   * The span as its run's row stores it, ended now (a background run's as its job is enqueued, which
   * its queue wait starts from); `attributes` are added to the stored copy only, for a row that may yet
   * not be written. The exported copy ends at the same time.
   */
  stored(attributes: Attributes = {}): StoredSpan {
    this.endedAt ??= epochNow();
    return {
      span_id: this.spanId,
      parent_id: this.parentId,
      name: SPAN.request,
      started_at: this.startedAt,
      ended_at: this.endedAt,
      attributes: storedAttributes({ ...this.attributes, ...attributes }, this.failure),
    };
  }

  /** Ends the exported copy, if any: at the stored copy's end when one was made. */
  end(): void {
    if (!this.exported) {
      return;
    }
    this.exported.setAttributes(this.attributes);
    if (this.failure !== null) {
      this.exported.setStatus({ code: SpanStatusCode.ERROR, ...this.failure });
    }
    this.exported.end(this.endedAt ?? undefined);
  }
}

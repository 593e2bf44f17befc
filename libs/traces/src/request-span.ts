import { Attributes, Span, SpanStatusCode } from '@opentelemetry/api';

import { requestAttributes, SPAN, TracedRun } from './run-span';
import { storedAttributes, StoredSpan } from './trace.entity';

/**
 * A request span as its run's row stores it: what the row does not say already (its ids, times, and a
 * failure); its name and the run's attributes come back on reading (`requestSpanOf`).
 */
export type StoredRequestSpan = Pick<StoredSpan, 'span_id' | 'parent_id' | 'started_at' | 'ended_at'> & {
  attributes?: StoredSpan['attributes'];
};

/** A stored request span in full, with what its run's row says. */
export function requestSpanOf(stored: StoredRequestSpan, run: TracedRun): StoredSpan {
  return { ...stored, name: SPAN.request, attributes: { ...requestAttributes(run), ...stored.attributes } };
}

/**
 * A run request's span. It is stored on its run's row (see `stored()`), not in the span batches: the
 * row is written anyway, where a span of its own cost a background POST two more rows. Its trace
 * continues elsewhere through `traceparent` (the job, the component's spans). When spans are exported
 * over OTLP, `exported` is the SDK's span with the same ids and start, ended with the same end, with
 * the attributes set on this one.
 */
export class RequestSpan {
  private readonly attributes: Attributes = {};
  private failure: { message: string } | null = null;
  private endedAt: number | null = null;
  /** Times are taken as the SDK's spans take them: the wall clock at the start, the monotonic clock for the duration. */
  private readonly monotonicStart = performance.now();

  constructor(
    readonly traceId: string,
    readonly spanId: string,
    /** The caller's span, when its traceparent came with the request. */
    private readonly parentId: string | null,
    /** Epoch milliseconds (Date.now()). */
    private readonly startedAt: number,
    private readonly exported: Span | null,
  ) {}

  /** When the request began, for a run stamped with it (the trace's start in GET /traces). */
  get startTime(): Date {
    return new Date(this.startedAt);
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

  /** The span as its run's row stores it, ended now; the exported copy ends at the same time. */
  stored(): StoredRequestSpan {
    this.endedAt ??= this.startedAt + (performance.now() - this.monotonicStart);
    const stored = { span_id: this.spanId, parent_id: this.parentId, started_at: this.startedAt, ended_at: this.endedAt };
    return this.failure === null ? stored : { ...stored, attributes: storedAttributes({}, this.failure) };
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

import { Span, SpanStatusCode } from '@opentelemetry/api';

import { requestAttributes, SPAN, TracedRun } from './run-span';
import { StoredSpan } from './trace.entity';

/**
 * A request span as its run's row stores it: what the row does not say already (its ids and times); its
 * name and the run's attributes come back on reading (`requestSpanOf`). A request that failed made no run,
 * so a stored request span never records a failure.
 */
export type StoredRequestSpan = Pick<StoredSpan, 'span_id' | 'parent_id' | 'started_at' | 'ended_at'>;

/** A stored request span in full, with what its run's row says. */
export function requestSpanOf(stored: StoredRequestSpan, run: TracedRun): StoredSpan {
  return { ...stored, name: SPAN.request, attributes: requestAttributes(run) };
}

/**
 * A run request's span. It is stored on its run's row (see `stored()`), written anyway, where a span
 * row of its own cost a background POST two more rows. Its trace
 * continues elsewhere through `traceparent` (the job, the component's spans). When spans are exported
 * over OTLP, `exported` is the SDK's span with the same ids and start, ended with the same end; it
 * alone is told the run's attributes and a failure.
 */
export class RequestSpan {
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

  /** Names the run the request made, on the exported copy (the stored one is read back with its run). */
  describe(run: TracedRun): void {
    this.exported?.setAttributes(requestAttributes(run));
  }

  fail(error: unknown): void {
    this.exported?.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }

  /** The span as its run's row stores it, ended now; the exported copy ends at the same time. */
  stored(): StoredRequestSpan {
    this.endedAt ??= this.startedAt + (performance.now() - this.monotonicStart);
    return { span_id: this.spanId, parent_id: this.parentId, started_at: this.startedAt, ended_at: this.endedAt };
  }

  /** Ends the exported copy, if any: at the stored copy's end when one was made. */
  end(): void {
    this.exported?.end(this.endedAt ?? undefined);
  }
}

import { Attributes, AttributeValue, Span, SpanStatusCode } from '@opentelemetry/api';
import { sanitizeAttributes } from '@opentelemetry/core';

import { storedAttributes, StoredSpan } from './trace.entity';

export type SpanAttributes = Record<string, string | number | boolean>;

/** Where a run's first spans sit: its trace, and the span they are children of (its request span). */
export interface SpanPlace {
  traceId: string;
  parentId: string;
}

/**
 * What a RunTrace needs from Tracing: span ids, and, when spans are exported over OTLP, the SDK's copy
 * of a span (whose ids the recorded span then takes, so both say the same), a child of the SDK's copy of
 * its parent or, for a run's first spans, of the request span the trace names.
 */
export interface SpanSource {
  spanId(): string;
  exported(name: string, parent: Span | SpanPlace, startTime: number, attributes: Attributes): Span | null;
}

/**
 * Bounds on what one execution stores (its spans go into a write shared with other runs' outcomes): the
 * SDK's default attribute count, a string length, and how many steps a component records.
 */
const LIMITS = { attributes: 128, valueLength: 4096, steps: 1000 };

const bounded = (value: AttributeValue): AttributeValue =>
  typeof value === 'string'
    ? value.slice(0, LIMITS.valueLength)
    : Array.isArray(value)
      ? (value.map((item) => (typeof item === 'string' ? item.slice(0, LIMITS.valueLength) : item)) as AttributeValue)
      : value;

/**
 * A span of a run's execution (its queue wait, its component, the component's steps). Plain data until
 * it ends, then one entry of its run's stored spans: no SDK span, processor or batch row unless spans
 * are exported, where `exported` is the SDK's copy, given the same attributes, status and end. Attributes
 * are taken as the SDK takes them (strings, numbers, booleans, arrays of one of those; anything else a
 * component passes is dropped), and not after the span ended.
 */
export class RecordedSpan {
  private readonly attributes: Attributes = {};
  private attributeCount = 0;
  private failure: { message: string } | null = null;
  private ended = false;
  /** Times are taken as RequestSpan takes them: the wall clock at the start, the monotonic clock for the duration. */
  private readonly monotonicStart = performance.now();
  private readonly wallStart = Date.now();

  constructor(
    private readonly trace: RunTrace,
    readonly spanId: string,
    private readonly parentId: string,
    private readonly name: string,
    /** Epoch milliseconds; earlier than now for a span that began before it could be recorded (a queue wait). */
    private readonly startedAt: number,
    attributes: Attributes,
    /** The SDK's copy, while spans are exported. */
    readonly exported: Span | null,
  ) {
    this.keep(attributes);
  }

  setAttributes(attributes: SpanAttributes): void {
    if (!this.ended) {
      this.keep(attributes);
      this.exported?.setAttributes(attributes);
    }
  }

  /** Marks the span failed, with the error's message. */
  fail(error: unknown): void {
    if (!this.ended) {
      this.failure = { message: String(error instanceof Error ? error.message : error).slice(0, LIMITS.valueLength) };
      this.exported?.setStatus({ code: SpanStatusCode.ERROR, ...this.failure });
    }
  }

  /** Ends the span once; it is then among its run's stored spans. */
  end(): void {
    if (this.ended) {
      return;
    }
    this.ended = true;
    const endedAt = this.wallStart + (performance.now() - this.monotonicStart);
    this.exported?.end(endedAt);
    this.trace.finished({
      span_id: this.spanId,
      parent_id: this.parentId,
      name: this.name,
      started_at: this.startedAt,
      ended_at: endedAt,
      attributes: storedAttributes(this.attributes, this.failure),
    });
  }

  private keep(attributes: Attributes): void {
    for (const [key, value] of Object.entries(sanitizeAttributes(attributes))) {
      const known = key in this.attributes;
      if (known || this.attributeCount < LIMITS.attributes) {
        this.attributeCount += known ? 0 : 1;
        this.attributes[key] = bounded(value!);
      }
    }
  }
}

export interface RunSpanOptions {
  /** The span this one is a step of; without one it is a child of the run's request span. */
  parent?: RecordedSpan;
  attributes?: SpanAttributes;
  /** Epoch milliseconds, for a span that began before it could be recorded (a queue wait). */
  startTime?: number;
}

/**
 * The spans one execution of a run records (Tracing.runTrace), in the trace its request span began. They
 * are stored with the run's outcome, in the write that records it anyway, so a traced run costs no row of
 * its own.
 */
export class RunTrace {
  /** A trace that records nothing: tracing is off, or the run's request was not traced. */
  static readonly NONE = new RunTrace(null, { traceId: '', parentId: '' });

  private readonly spans: StoredSpan[] = [];
  private steps = 0;

  constructor(
    private readonly source: SpanSource | null,
    /** The span the run's own spans are children of: its request span, from the job's or the request's traceparent. */
    private readonly root: SpanPlace,
  ) {}

  start(name: string, options: RunSpanOptions = {}): RecordedSpan {
    const { parent } = options;
    if (parent && ++this.steps > LIMITS.steps) {
      // Past the limit a step records nothing; the run's own spans (its queue wait, its component) always do.
      return new RecordedSpan(RunTrace.NONE, '', parent.spanId, name, Date.now(), {}, null);
    }
    const startedAt = options.startTime ?? Date.now();
    const attributes = options.attributes ?? {};
    const exported = this.source?.exported(name, parent?.exported ?? this.root, startedAt, attributes) ?? null;
    const spanId = exported?.spanContext().spanId ?? this.source?.spanId() ?? '';
    return new RecordedSpan(this, spanId, parent?.spanId ?? this.root.parentId, name, startedAt, attributes, exported);
  }

  /** The spans ended so far, as their run's row stores them. */
  storedSpans(): StoredSpan[] {
    return [...this.spans];
  }

  /** @internal A span of this trace has ended. */
  finished(span: StoredSpan): void {
    if (this.source) {
      this.spans.push(span);
    }
  }
}

import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  Attributes,
  Context,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  Span,
  SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  Tracer,
} from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import { BatchSpanProcessor, RandomIdGenerator, SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { DataSource } from 'typeorm';

import { Env } from '@app/config';

import { PostgresSpanExporter } from './postgres-span.exporter';
import { RequestSpan } from './request-span';
import { SPAN } from './run-span';

export const TRACING_SERVICE = 'traces:service-name';

/** Spans wait at most this long (or until this many are ready) before they are written (or exported) in one go. */
const BATCH = { scheduledDelayMillis: 500, maxExportBatchSize: 1000, maxQueueSize: 20_000 };

/** What callers hold while tracing is off: records nothing, costs nothing. */
const NOT_RECORDING = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export interface SpanOptions {
  /** A span of this process, or a W3C `traceparent` from elsewhere (a caller, a job); none starts a new trace. */
  parent?: Span | string;
  attributes?: Attributes;
  /** Epoch milliseconds, for a span that began before it could be recorded (a queue wait). */
  startTime?: number;
}

/**
 * The platform's spans: recorded with the OpenTelemetry SDK, stored in PostgreSQL in batches
 * (GET /traces) and, when OTEL_EXPORTER_OTLP_ENDPOINT is set, exported over OTLP/HTTP too through
 * `@opentelemetry/sdk-node`. With TRACES_ENABLED=false every span is a shared non-recording one.
 */
@Injectable()
export class Tracing implements OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('Tracing');
  private readonly store: SpanProcessor | null = null;
  private readonly ids = new RandomIdGenerator();
  private tracer: Tracer | null = null;
  /** Whether spans are exported over OTLP too: only then does a request span need an SDK span. */
  private exporting = false;
  private shutdown: (() => Promise<void>) | null = null;

  constructor(
    private readonly env: Env,
    @InjectDataSource() dataSource: DataSource,
    @Inject(TRACING_SERVICE) private readonly serviceName: string,
  ) {
    if (!env.TRACES_ENABLED) {
      return;
    }
    this.store = new BatchSpanProcessor({ exporter: new PostgresSpanExporter(dataSource), ...BATCH });
    if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) {
      const provider = new TracerProvider({ spanProcessors: [this.store] });
      this.shutdown = () => provider.shutdown();
      this.tracer = provider.getTracer('platform-service');
    }
  }

  /** The OTLP/HTTP path, before the app serves anything: the SDK registers its provider globally, our store beside the exporter. */
  async onModuleInit(): Promise<void> {
    if (!this.store || !this.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
      return;
    }
    // Loaded only here: an instance without an OTLP endpoint never loads the SDK or its exporters.
    const [{ NodeSDK }, { OTLPTraceExporter }] = await Promise.all([
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
    ]);
    const sdk = new NodeSDK({
      serviceName: this.env.OTEL_SERVICE_NAME ?? this.serviceName,
      spanProcessors: [this.store, new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), ...BATCH })],
      // Spans only: no metrics or logs pipelines, no auto-instrumentation.
      metricReaders: [],
      logRecordProcessors: [],
      instrumentations: [],
    });
    sdk.start();
    this.shutdown = () => sdk.shutdown();
    this.tracer = trace.getTracer('platform-service');
    this.exporting = true;
  }

  /**
   * A run request's span, a child of the caller's `traceparent` when one came; undefined while tracing
   * is off, or when the caller's trace is not sampled. It is stored with its run (see RequestSpan).
   * Without an OTLP exporter no SDK span is made for it: on a background POST, the SDK's span and its
   * batching were most of what tracing cost the api.
   */
  startRequest(parent?: string): RequestSpan | undefined {
    if (!this.tracer) {
      return undefined;
    }
    const startedAt = Date.now();
    const caller = parent === undefined ? undefined : this.parentOf(parent);
    if (this.exporting) {
      const context = caller ? trace.setSpanContext(ROOT_CONTEXT, caller) : ROOT_CONTEXT;
      const span = this.tracer.startSpan(SPAN.request, { kind: SpanKind.SERVER, startTime: startedAt }, context);
      const { traceId, spanId } = span.spanContext();
      return span.isRecording() ? new RequestSpan(traceId, spanId, caller?.spanId ?? null, startedAt, span) : undefined;
    }
    if (caller && !(caller.traceFlags & TraceFlags.SAMPLED)) {
      // As the SDK's default sampler does: a caller that does not record its trace gets none recorded here.
      return undefined;
    }
    return new RequestSpan(
      caller?.traceId ?? this.ids.generateTraceId(),
      this.ids.generateSpanId(),
      caller?.spanId ?? null,
      startedAt,
      null,
    );
  }

  /**
   * A caller's traceparent as the run's other spans may join it when the run has no request span (the
   * caller's trace is not sampled): formatted from what it names, so nothing else of the header is kept;
   * undefined while tracing is off or when it is malformed.
   */
  callerTraceparent(traceparent: string | undefined): string | undefined {
    const caller = this.tracer && traceparent !== undefined ? this.parentOf(traceparent) : undefined;
    return caller && `00-${caller.traceId}-${caller.spanId}-0${caller.traceFlags & TraceFlags.SAMPLED}`;
  }

  start(name: string, options: SpanOptions = {}): Span {
    if (!this.tracer) {
      return NOT_RECORDING;
    }
    const { parent } = options;
    const context = typeof parent === 'string' ? this.extract(parent) : parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
    // `parent` rides along in the options; the SDK reads only its own keys.
    return this.tracer.startSpan(name, options, context);
  }

  private extract(traceparent: string): Context {
    const parent = this.parentOf(traceparent);
    return parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
  }

  /** The span a W3C traceparent names; undefined when it is malformed (the run's trace then starts afresh). */
  private parentOf(traceparent: string): SpanContext | undefined {
    const parsed = parseTraceParent(traceparent);
    return parsed ? { ...parsed, isRemote: true } : undefined;
  }

  /** Ends a span as failed, with the error's message. */
  fail(span: Span, error: unknown): void {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }

  /** Writes (and exports) what is still batched before the database connection closes. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.shutdown?.().catch((error: unknown) => this.log.warn(`flushing spans failed: ${String(error)}`));
  }
}

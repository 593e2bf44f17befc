import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  Attributes,
  defaultTextMapGetter,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  Span,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BatchSpanProcessor, SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { DataSource } from 'typeorm';

import { Env } from '@app/config';

import { PostgresSpanExporter } from './postgres-span.exporter';

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
  kind?: SpanKind;
}

/**
 * The platform's spans: recorded with the OpenTelemetry SDK, stored in PostgreSQL in batches
 * (GET /traces) and, when OTEL_EXPORTER_OTLP_ENDPOINT is set, exported over OTLP/HTTP too through
 * `@opentelemetry/sdk-node`. With TRACES_ENABLED=false every span is a shared non-recording one.
 */
@Injectable()
export class Tracing implements OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('Tracing');
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly store: SpanProcessor | null = null;
  private tracer: Tracer | null = null;
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
  }

  start(name: string, options: SpanOptions = {}): Span {
    if (!this.tracer) {
      return NOT_RECORDING;
    }
    const { parent } = options;
    const context =
      typeof parent === 'string'
        ? this.propagator.extract(ROOT_CONTEXT, { traceparent: parent }, defaultTextMapGetter)
        : parent
          ? trace.setSpan(ROOT_CONTEXT, parent)
          : ROOT_CONTEXT;
    // `parent` rides along in the options; the SDK reads only its own keys.
    return this.tracer.startSpan(name, options, context);
  }

  /**
   * The span's W3C `traceparent` (version 00), to continue its trace elsewhere; undefined when nothing
   * is recorded. Formatted from the span's own context: it is on every background POST's path, where
   * the propagator's context and carrier objects were a measurable share of tracing's cost. Only the
   * sampled flag is carried, and no tracestate (a job never carried one).
   */
  traceparent(span: Span): string | undefined {
    if (!span.isRecording()) {
      return undefined;
    }
    const { traceId, spanId, traceFlags } = span.spanContext();
    return `00-${traceId}-${spanId}-0${traceFlags & TraceFlags.SAMPLED}`;
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

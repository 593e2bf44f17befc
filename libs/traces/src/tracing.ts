import { setTimeout as sleep } from 'node:timers/promises';

import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Attributes, ROOT_CONTEXT, Span, SpanContext, SpanKind, trace, TraceFlags, Tracer } from '@opentelemetry/api';
import { ExportResult, ExportResultCode, parseTraceParent } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';

import { Env } from '@app/config';
import { pooledRandomBytes, timeOrderedId } from '@app/database';
import { LastingCondition } from '@app/logging';

import { RequestSpan } from './request-span';
import { SPAN } from './run-span';
import { RunTrace, SpanPlace, SpanSource } from './run-trace';

export const TRACING_SERVICE = 'traces:service-name';

/** How long a stopping process waits for the OTLP collector to take the spans still batched. */
const EXPORT_AT_STOP_MS = 3000;

/** A W3C span id (8 bytes): random, as lowercase hex, never all zeros (the invalid id). */
function newSpanId(): string {
  for (;;) {
    const id = pooledRandomBytes(8).toString('hex');
    if (!/^0+$/.test(id)) {
      return id;
    }
  }
}

/** A W3C trace id (16 bytes): time-ordered, as run ids are (see timeOrderedId), since stored traces are found by it. */
function newTraceId(): string {
  return timeOrderedId().replaceAll('-', '');
}

/** Exported spans wait at most this long (or until this many are ready) before they go out in one request. */
const BATCH = { scheduledDelayMillis: 500, maxExportBatchSize: 1000, maxQueueSize: 20_000 };

/** Where the OTLP exporter sends spans: its own traces variable when set, else the base endpoint's /v1/traces. */
function tracesEndpoint(base: string): string {
  return process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** The endpoint as a log line may show it: no user, password or query. */
function withoutCredentials(endpoint: string): string {
  const url = new URL(endpoint);
  return `${url.origin}${url.pathname}`.replace(/\/$/, '');
}

/**
 * The exporter, with its failures said in the log: the SDK drops a batch the collector did not take without a word,
 * and an operator found out only when traces were missing. Said when export starts failing, then once a minute with
 * the spans dropped meanwhile, and once when it works again.
 */
function reportingFailures(exporter: SpanExporter, log: Logger, endpoint: string): SpanExporter {
  const failing = new LastingCondition();
  const noteResult = (result: ExportResult, spans: number) => {
    if (result.code === ExportResultCode.SUCCESS) {
      failing.ended((dropped) => log.log(`exporting spans to ${endpoint} works again (${dropped} span(s) dropped since last said)`));
      return;
    }
    // The error's message only: an exporter error carries the collector's whole answer.
    failing.met(spans, (dropped) =>
      log.warn(
        `exporting spans to ${endpoint} failed (${result.error?.message ?? 'no reason given'}): ${dropped} span(s) dropped; ` +
          'GET /traces still has them (said again once a minute while it fails)',
      ),
    );
  };
  return {
    export: (spans: ReadableSpan[], done: (result: ExportResult) => void) =>
      exporter.export(spans, (result) => {
        noteResult(result, spans.length);
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * The platform's spans. A run's spans are plain records stored with the run (its request span on its row
 * when the run is made, the rest with its outcome), read back by GET /traces. When
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, each is also an OpenTelemetry SDK span exported over OTLP/HTTP
 * through `@opentelemetry/sdk-node`, with the same ids. With TRACES_ENABLED=false nothing is recorded.
 */
@Injectable()
export class Tracing implements OnModuleInit, BeforeApplicationShutdown {
  private readonly log = new Logger('Tracing');
  /** The SDK's tracer, only while spans are exported over OTLP. */
  private tracer: Tracer | null = null;
  private shutdown: (() => Promise<void>) | null = null;
  private readonly spans: SpanSource = {
    spanId: newSpanId,
    exported: (name, place, startTime, attributes) => this.exported(name, place, startTime, attributes),
  };

  constructor(
    private readonly env: Env,
    @Inject(TRACING_SERVICE) private readonly serviceName: string,
  ) {}

  /** The OTLP/HTTP path, before the app serves anything: the SDK registers its provider globally. */
  async onModuleInit(): Promise<void> {
    if (!this.env.TRACES_ENABLED || !this.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
      return;
    }
    // Loaded only here: an instance without an OTLP endpoint never loads the SDK or its exporters.
    const [{ NodeSDK }, { BatchSpanProcessor }, { OTLPTraceExporter }] = await Promise.all([
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/exporter-trace-otlp-http'),
    ]);
    const sdk = new NodeSDK({
      serviceName: this.env.OTEL_SERVICE_NAME ?? this.serviceName,
      // The ids stored spans get, so that an exported run's trace id is time-ordered too.
      idGenerator: { generateTraceId: newTraceId, generateSpanId: newSpanId },
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: reportingFailures(
            new OTLPTraceExporter(),
            this.log,
            withoutCredentials(tracesEndpoint(this.env.OTEL_EXPORTER_OTLP_ENDPOINT)),
          ),
          ...BATCH,
        }),
      ],
      // Spans only: no metrics or logs pipelines, no auto-instrumentation.
      metricReaders: [],
      logRecordProcessors: [],
      instrumentations: [],
    });
    sdk.start();
    this.shutdown = () => sdk.shutdown();
    this.tracer = trace.getTracer('platform-service');
  }

  /**
   * A run request's span, a child of the caller's `traceparent` when one came; undefined while tracing
   * is off, or when the caller's trace is not sampled. It is stored with its run (see RequestSpan).
   * Without an OTLP exporter no SDK span is made for it: on a background POST, the SDK's span and its
   * batching were most of what tracing cost the api.
   */
  startRequest(parent?: string): RequestSpan | undefined {
    if (!this.env.TRACES_ENABLED) {
      return undefined;
    }
    const startedAt = Date.now();
    const caller = parent === undefined ? undefined : this.parentOf(parent);
    if (this.tracer) {
      const context = caller ? trace.setSpanContext(ROOT_CONTEXT, caller) : ROOT_CONTEXT;
      const span = this.tracer.startSpan(SPAN.request, { kind: SpanKind.SERVER, startTime: startedAt }, context);
      const { traceId, spanId } = span.spanContext();
      return span.isRecording() ? new RequestSpan(traceId, spanId, caller?.spanId ?? null, startedAt, span) : undefined;
    }
    if (caller && !(caller.traceFlags & TraceFlags.SAMPLED)) {
      // As the SDK's default sampler does: a caller that does not record its trace gets none recorded here.
      return undefined;
    }
    return new RequestSpan(caller?.traceId ?? newTraceId(), newSpanId(), caller?.spanId ?? null, startedAt, null);
  }

  /**
   * The spans of one execution of a run, children of its request span (`parent`: the traceparent its job
   * or its request carries). None are recorded while tracing is off, when the run's request was not traced
   * (no traceparent: a worker does not start traces of its own), or when that trace is not sampled.
   */
  runTrace(parent: string | undefined): RunTrace {
    const place = this.env.TRACES_ENABLED && parent !== undefined ? this.parentOf(parent) : undefined;
    return place && place.traceFlags & TraceFlags.SAMPLED
      ? new RunTrace(this.spans, { traceId: place.traceId, parentId: place.spanId })
      : RunTrace.NONE;
  }

  /**
   * The SDK's copy of a run's span, while spans are exported: the SDK gives it its ids. Its parent is the SDK's
   * copy of the run's span it is a step of, or, for the run's first spans, the request span its trace names
   * (remote: in the api's process for a worker's run).
   */
  private exported(name: string, parent: Span | SpanPlace, startTime: number, attributes: Attributes): Span | null {
    if (!this.tracer) {
      return null;
    }
    const context =
      'spanContext' in parent
        ? trace.setSpan(ROOT_CONTEXT, parent)
        : trace.setSpanContext(ROOT_CONTEXT, {
            traceId: parent.traceId,
            spanId: parent.parentId,
            traceFlags: TraceFlags.SAMPLED,
            isRemote: true,
          });
    return this.tracer.startSpan(name, { startTime, attributes }, context);
  }

  /** The span a W3C traceparent names; undefined when it is malformed (the run's trace then starts afresh). */
  private parentOf(traceparent: string): SpanContext | undefined {
    const parsed = parseTraceParent(traceparent);
    return parsed ? { ...parsed, isRemote: true } : undefined;
  }

  /**
   * Exports what is still batched before the process ends, for at most EXPORT_AT_STOP_MS: a collector that does
   * not answer must not hold the stop (a worker's drain has a deadline; the api's pod a grace period).
   */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.shutdown) {
      return;
    }
    const exported = this.shutdown().then(
      () => true,
      (error: unknown) => (this.log.warn(`flushing spans failed: ${String(error)}`), true),
    );
    // An unref'd timer: it holds no stop that ended sooner.
    if (!(await Promise.race([exported, sleep(EXPORT_AT_STOP_MS, false, { ref: false })]))) {
      this.log.warn(`spans not exported at stop: the collector did not answer within ${EXPORT_AT_STOP_MS} ms`);
    }
  }
}

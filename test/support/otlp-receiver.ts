import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/** A span as it arrived over OTLP/HTTP, with the service that sent it. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** String attributes by key (what the tests read). */
  attributes: Record<string, string>;
}

type WireAttributes = { key: string; value: { stringValue?: string } }[];

/**
 * A stand-in OpenTelemetry collector on loopback: accepts OTLP/HTTP JSON export requests at
 * /v1/traces (the wire format the SDK's http exporter sends) and keeps every span it was sent.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly paths: string[] = [];
  private server: Server | null = null;

  /** Starts listening; returns the base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  async listen(): Promise<string> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.paths.push(`${request.method} ${request.url} ${request.headers['content-type']}`);
        if (request.url === '/v1/traces' && (request.headers['content-type'] ?? '').includes('json')) {
          this.keep(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private keep(body: {
    resourceSpans?: {
      resource?: { attributes?: WireAttributes };
      scopeSpans?: { spans?: (Omit<ReceivedSpan, 'service' | 'attributes'> & { attributes?: WireAttributes })[] }[];
    }[];
  }): void {
    for (const { resource, scopeSpans } of body.resourceSpans ?? []) {
      const service = resource?.attributes?.find((attribute) => attribute.key === 'service.name')?.value.stringValue ?? '';
      for (const { spans } of scopeSpans ?? []) {
        for (const span of spans ?? []) {
          const attributes = Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, value.stringValue ?? '']));
          this.spans.push({
            service,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            attributes,
          });
        }
      }
    }
  }
}

import { type AddressInfo, createServer, type Socket } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { OtlpReceiver } from '../../../test/support/otlp-receiver';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

describe('OpenTelemetry export over OTLP/HTTP', () => {
  let receiver: OtlpReceiver;
  let api: RunningApi;
  let worker: RunningProcess;

  beforeAll(async () => {
    receiver = new OtlpReceiver();
    const endpoint = await receiver.listen();
    const env = {
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      DEMO_COMPONENTS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    };
    api = await startApi(env);
    worker = await startWorker(env);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await receiver?.close();
  });

  it('sends the spans of one background run from the api and the worker under one trace id, the one GET /traces shows', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const accepted = await call(api.url, 'POST', '/agents/echo-agent/runs', {
      token: ROOT_KEY,
      json: { message: 'exported', background: true },
      headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
    });
    expect(accepted.status, accepted.text).toBe(202);
    await waitFor(async () => receiver.spans.filter((span) => span.traceId === traceId).length >= 3, 20_000, 'the exported spans');

    const spans = receiver.spans.filter((span) => span.traceId === traceId);
    const request = spans.find((span) => span.name === 'run.request')!;
    const wait = spans.find((span) => span.name === 'run.queue_wait')!;
    const component = spans.find((span) => span.name === 'run.component')!;
    expect(request).toMatchObject({ service: 'platform-api', parentSpanId: 'b7ad6b7169203331' });
    // The exported request span names the run it made, as the stored one does when read back.
    expect(request.attributes['run.id']).toBe(accepted.body.run_id);
    expect(wait).toMatchObject({ service: 'platform-worker', parentSpanId: request.spanId });
    expect(component).toMatchObject({ service: 'platform-worker', parentSpanId: request.spanId });
    expect(receiver.paths.every((path) => path.startsWith('POST /v1/traces'))).toBe(true);

    // The same spans were stored: the run's trace in the api has the exported ids.
    await waitFor(
      async () => (await call(api.url, 'GET', `/traces/${traceId}`, { token: ROOT_KEY })).body.spans?.length >= 3,
      20_000,
      'the stored trace',
    );
    const stored = await call(api.url, 'GET', `/traces/${traceId}`, { token: ROOT_KEY });
    expect(stored.body.run_id).toBe(accepted.body.run_id);
    expect(stored.body.spans.map((span: { span_id: string }) => span.span_id).sort()).toEqual(
      [request.spanId, wait.spanId, component.spanId].sort(),
    );
  });

  it('starts a trace of its own, without a traceparent, under a time-ordered id as when nothing is exported', async () => {
    const posted = Date.now();
    const accepted = await call(api.url, 'POST', '/agents/echo-agent/runs', {
      token: ROOT_KEY,
      json: { message: 'own trace', background: true },
    });
    expect(accepted.status, accepted.text).toBe(202);
    const runId = accepted.body.run_id;
    await waitFor(
      async () => receiver.spans.some((span) => span.name === 'run.request' && span.attributes['run.id'] === runId),
      20_000,
      'the exported request span',
    );
    const { traceId } = receiver.spans.find((span) => span.name === 'run.request' && span.attributes['run.id'] === runId)!;
    expect(traceId[12]).toBe('7');
    expect(parseInt(traceId.slice(0, 12), 16)).toBeGreaterThanOrEqual(posted);
    expect((await call(api.url, 'GET', `/traces?run_id=${runId}`, { token: ROOT_KEY })).body.data[0].trace_id).toBe(traceId);
  });
});

describe('OpenTelemetry export to a collector that never answers', () => {
  it('does not hold a worker’s stop: the spans still batched are given up after 3 s, and the stop ends cleanly', async () => {
    // Accepts connections and never answers, as a collector behind a dead load balancer can.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const env = {
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      DEMO_COMPONENTS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    };
    const api = await startApi(env);
    const worker = await startWorker({ ...env, WORKER_SHUTDOWN_TIMEOUT_SECONDS: '1' });
    try {
      const run = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'hi', background: true } });
      await waitFor(
        async () =>
          (await call(api.url, 'GET', `/agents/echo-agent/runs/${run.body.run_id}`, { token: ROOT_KEY })).body.status === 'completed',
        20_000,
        'the run to complete',
      );
      const stopping = Date.now();
      // A clean exit, before the collector's own timeout (10 s): the stop waits 3 s at most for it.
      expect(await worker.stop()).toBe(0);
      expect(Date.now() - stopping).toBeLessThan(9_000);
      expect(worker.output()).toContain('spans not exported at stop');
    } finally {
      await worker.stop('SIGKILL');
      await api.stop('SIGKILL');
      sockets.forEach((socket) => socket.destroy());
      silent.close();
    }
  }, 90_000);
});

describe('OpenTelemetry export to an endpoint that refuses connections', () => {
  it('says so in the log, with the spans dropped, while GET /traces still has them', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      DEMO_COMPONENTS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    });
    try {
      const run = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'hi' } });
      expect(run.body.status).toBe('completed');
      await waitFor(async () => api.output().includes(`exporting spans to ${endpoint}/v1/traces failed`), 30_000, 'the warning');
      const warning = api
        .output()
        .split('\n')
        .find((line) => line.includes('exporting spans to'))!;
      expect(JSON.parse(warning)).toMatchObject({
        level: 40,
        msg: expect.stringMatching(/failed \(.+\): [1-9]\d* span\(s\) dropped; GET \/traces still has them/),
      });
      expect((await call(api.url, 'GET', `/traces?run_id=${run.body.run_id}`, { token: ROOT_KEY })).body.data).toHaveLength(1);
    } finally {
      await api.stop();
    }
  }, 60_000);
});

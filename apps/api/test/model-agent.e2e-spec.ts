import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { streamRun } from '../../../test/support/event-stream';
import { call } from '../../../test/support/http';
import { OpenAiCompatibleServer } from '../../../test/support/openai-compatible-server';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

const API_KEY = 'sk-standin-secret-0123456789';

describe('modelAgent against an OpenAI-compatible server on loopback', () => {
  let provider: OpenAiCompatibleServer;
  let api: RunningApi;
  let worker: RunningProcess;

  beforeAll(async () => {
    provider = new OpenAiCompatibleServer();
    const baseURL = await provider.listen();
    const file = join(mkdtempSync(join(tmpdir(), 'model-agent-')), 'agents.mjs');
    writeFileSync(
      file,
      `export default ({ modelAgent }) => [
        modelAgent({ id: 'assistant', instructions: 'You are terse.', model: 'standin-1', baseURL: '${baseURL}', apiKeyEnv: 'STANDIN_API_KEY', historyTurns: 1, timeoutSeconds: 5 }),
        modelAgent({ id: 'keyless', instructions: 'x', model: 'standin-1', baseURL: '${baseURL}', apiKeyEnv: 'STANDIN_UNSET_KEY' }),
      ];`,
    );
    const env = {
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      COMPONENTS_MODULE: file,
      STANDIN_API_KEY: API_KEY,
      LOG_LEVEL: 'debug',
    };
    api = await startApi(env);
    worker = await startWorker(env);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await provider?.close();
  });

  const run = (json: Record<string, unknown>) => call(api.url, 'POST', '/agents/assistant/runs', { token: ROOT_KEY, json });
  const runBody = async (runId: string) => (await call(api.url, 'GET', `/agents/assistant/runs/${runId}`, { token: ROOT_KEY })).body;
  /** The attributes of a run's model.call span, once its trace is stored (spans are written in batches). */
  const modelCallOf = async (runId: string): Promise<Record<string, unknown>> => {
    let modelCall: { attributes: Record<string, unknown> } | undefined;
    await waitFor(
      async () => {
        const traces = (await call(api.url, 'GET', `/traces?run_id=${runId}`, { token: ROOT_KEY })).body.data;
        modelCall = traces[0]?.spans.find((span: { name: string }) => span.name === 'model.call');
        return modelCall !== undefined;
      },
      10_000,
      `the trace of run ${runId}`,
    );
    return modelCall!.attributes;
  };

  it('assembles the content from several chunks and stores the model and token usage on the run', async () => {
    provider.next({ chunks: ['Hel', 'lo, ', 'wor', 'ld'], usage: { prompt_tokens: 21, completion_tokens: 4 } });
    const response = await run({ message: 'greet me' });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({
      status: 'completed',
      content: 'Hello, world',
      model: 'standin-1',
      input_tokens: 21,
      output_tokens: 4,
    });
    const request = provider.requests.at(-1)!;
    expect(request.body).toMatchObject({ model: 'standin-1', stream: true });
    expect(request.body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'greet me' },
    ]);
    expect(request.authorization).toBe(`Bearer ${API_KEY}`);
    // The key was read from its variable and sent, never logged (debug logging is on).
    expect(api.output() + worker.output()).not.toContain(API_KEY);
  });

  it('streams RunContent events as the provider’s chunks arrive, before the run ends', async () => {
    provider.next({ chunks: ['a', 'b', 'c'], chunkDelayMs: 300 });
    const events = await streamRun(api.url, '/agents/assistant/runs', { token: ROOT_KEY, json: { message: 'slowly' } });
    const content = events.filter((event) => event.event === 'RunContent');
    expect(content.map((event) => event.data.content)).toEqual(['a', 'b', 'c']);
    const done = events.at(-1)!;
    expect(done.event).toBe('RunCompleted');
    // Each piece reached the client well before the next was produced, and before the end.
    expect(done.at - content[0].at).toBeGreaterThan(450);
    expect(content[1].at - content[0].at).toBeGreaterThan(200);
  });

  it('sends the session’s latest turns (historyTurns: 1, one exchange) before the message', async () => {
    provider
      .next({ chunks: ['first answer'] })
      .next({ chunks: ['second answer'] })
      .next({ chunks: ['third answer'] });
    const first = await run({ message: 'one', session_id: `model-${Date.now()}` });
    await run({ message: 'two', session_id: first.body.session_id });
    await run({ message: 'three', session_id: first.body.session_id });
    expect(provider.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'two' },
      { role: 'assistant', content: 'second answer' },
      { role: 'user', content: 'three' },
    ]);
  });

  it('aborts the provider request when the run is cancelled', async () => {
    provider.next({ chunks: ['thinking'], hang: true });
    const before = provider.clientDisconnects;
    const events = await streamRun(api.url, '/agents/assistant/runs', {
      token: ROOT_KEY,
      json: { message: 'long' },
      onEvent: async (event) => {
        if (event.event === 'RunContent') {
          await call(api.url, 'POST', `/agents/assistant/runs/${event.data.run_id}/cancel`, { token: ROOT_KEY });
        }
      },
    });
    expect(events.at(-1)!.event).toBe('RunCancelled');
    await waitFor(async () => provider.clientDisconnects > before, 5_000, 'the provider connection to close');
  });

  it('aborts the provider request of a background run cancelled on the worker', async () => {
    provider.next({ chunks: ['thinking'], hang: true });
    const before = provider.clientDisconnects;
    const accepted = await run({ message: 'long', background: true });
    await waitFor(
      async () =>
        provider.requests.at(-1)?.body.messages.at(-1)?.content === 'long' && (await runBody(accepted.body.run_id)).status === 'running',
      10_000,
      'the model call',
    );
    await call(api.url, 'POST', `/agents/assistant/runs/${accepted.body.run_id}/cancel`, { token: ROOT_KEY });
    await waitFor(async () => provider.clientDisconnects > before, 5_000, 'the provider connection to close');
    await waitFor(async () => (await runBody(accepted.body.run_id)).status === 'cancelled', 5_000, 'the run to be cancelled');
  });

  it.each([429, 500, 503])('fails the run with the provider status in error when the provider answers %i', async (status) => {
    provider.next({ status });
    const response = await run({ message: 'x' });
    expect(response.body).toMatchObject({ status: 'failed', model: null });
    expect(response.body.error).toContain(`Model provider answered HTTP ${status}`);
  });

  it('fails a background run on a provider error, and the job’s attempts decide the retry', async () => {
    provider.next({ status: 429 });
    const accepted = await run({ message: 'x', background: true });
    await waitFor(async () => (await runBody(accepted.body.run_id)).status === 'failed', 10_000, 'the run to fail');
    expect((await runBody(accepted.body.run_id)).error).toContain('HTTP 429');
    const job = (await call(api.url, 'GET', `/queue/jobs/${accepted.body.run_id}`, { token: ROOT_KEY })).body;
    expect(job).toMatchObject({ status: 'failed', attempt: 1, max_attempts: 1 });
  });

  it('reads a provider’s error body only so far: a huge one is not awaited, nor held, and the run fails saying so', async () => {
    // 8 MiB written over about 6.4 s: the api reads its first 64 KiB and stops, where reading it whole took the wait
    // (and, for a 400 MB body, the api's memory).
    provider.next({ status: 500, slowErrorBytes: 8 * 1024 * 1024 });
    const started = Date.now();
    const response = await run({ message: 'big error' });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(response.body.status).toBe('failed');
    expect(response.body.error).toMatch(/^Model provider answered HTTP 500 \(.+\): \{"error":\{"message":"xxx/);
    expect(response.body.error.length).toBeLessThan(400);
  });

  it('never shows the key, even when the provider quotes the one it refused', async () => {
    provider.next({ status: 401, errorMessage: `Incorrect API key provided: ${API_KEY}` });
    const refused = await run({ message: 'who am I' });
    expect(refused.body).toMatchObject({ status: 'failed', error: expect.stringContaining('HTTP 401') });
    expect(refused.body.error).toContain('Incorrect API key provided: [redacted]');
    // The trace's model call is marked failed, with the same redacted reason.
    expect(await modelCallOf(refused.body.run_id)).toMatchObject({
      'otel.status_code': 'ERROR',
      'otel.status_description': refused.body.error,
    });
    provider.next({ status: 401, errorMessage: `Incorrect API key provided: ${API_KEY}` });
    const background = await run({ message: 'who am I', background: true });
    await waitFor(async () => (await runBody(background.body.run_id)).status === 'failed', 10_000, 'the run to fail');
    const job = (await call(api.url, 'GET', `/queue/jobs/${background.body.run_id}`, { token: ROOT_KEY })).body;
    expect(JSON.stringify([await runBody(background.body.run_id), job])).not.toContain(API_KEY);
    expect(api.output() + worker.output()).not.toContain(API_KEY);
  });

  it('completes a run whose answer was cut at maxOutputTokens, and its model call says so', async () => {
    provider.next({ chunks: ['Once upon a'], finishReason: 'length' });
    const cut = await run({ message: 'a long story' });
    expect(cut.body).toMatchObject({ status: 'completed', content: 'Once upon a' });
    expect(await modelCallOf(cut.body.run_id)).toMatchObject({ finish_reason: 'length', 'gen_ai.response.finish_reasons': 'length' });
  });

  it('fails a run whose key variable is unset, naming the variable, without calling the provider', async () => {
    const calls = provider.requests.length;
    const response = await call(api.url, 'POST', '/agents/keyless/runs', { token: ROOT_KEY, json: { message: 'x' } });
    expect(response.body).toMatchObject({
      status: 'failed',
      error:
        "The model's API key is missing: STANDIN_UNSET_KEY is not set in the environment of this process (export it before starting; a .env file is not read: set -a; . ./.env; set +a loads one)",
    });
    expect(provider.requests.length).toBe(calls);
    // A run executed by the api fails in the api's log too, not only as its request's 200. The line comes
    // through the api's stdout, a pipe that may deliver it after the answer arrived.
    await expect.poll(() => api.output(), { timeout: 5_000 }).toContain(`"run_id":"${response.body.run_id}"`);
    await expect.poll(() => api.output()).toMatch(/"msg":"run failed: agent keyless"/);
    // And it was said at boot, in both processes, before any run.
    for (const process of [api, worker]) {
      const warning = process
        .output()
        .split('\n')
        .find((line) => line.includes("Agent 'keyless': STANDIN_UNSET_KEY is not set in the environment of this process"));
      // A line of the process's own log format (JSON here), not the framework's default one.
      expect(JSON.parse(warning!)).toMatchObject({ level: 40 });
    }
  });

  it('stops a model whose answer passes a million characters, and fails the run', async () => {
    provider.next({ chunks: Array.from({ length: 12 }, () => 'x'.repeat(100_000)) });
    const response = await run({ message: 'say everything' });
    expect(response.body).toMatchObject({ status: 'failed', content: null });
    expect(response.body.error).toBe("The model's answer passed 1000000 characters: the call was stopped");
  });

  it('fails the run when the provider stalls past timeoutSeconds', async () => {
    provider.next({ chunks: ['...'], hang: true });
    const response = await run({ message: 'stall' });
    expect(response.body).toMatchObject({ status: 'failed' });
    expect(response.body.error).toMatch(/timed out after 5s/);
  }, 20_000);
});

describe('modelAgent with no provider listening', () => {
  it('fails the run naming the refused connection', async () => {
    const closed = new OpenAiCompatibleServer();
    const baseURL = await closed.listen();
    await closed.close();
    const file = join(mkdtempSync(join(tmpdir(), 'model-agent-')), 'agents.mjs');
    writeFileSync(
      file,
      `export default ({ modelAgent }) => [modelAgent({ id: 'offline', instructions: 'x', model: 'm', baseURL: '${baseURL}' })];`,
    );
    const api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, COMPONENTS_MODULE: file });
    try {
      const response = await call(api.url, 'POST', '/agents/offline/runs', { token: ROOT_KEY, json: { message: 'x' } });
      expect(response.body).toMatchObject({ status: 'failed' });
      expect(response.body.error).toMatch(/^Model provider unreachable at .*: ECONNREFUSED/);
    } finally {
      await api.stop();
    }
  });
});

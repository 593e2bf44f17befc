import { APICallError, simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';

import type { ModelAgentOptions } from './authoring';
import { ModelUsage, RunCancelled, RunContext, Turn } from './component';
import { modelAgent, runModelAgent } from './model-agent';

const OPTIONS: ModelAgentOptions = {
  id: 'a',
  instructions: 'Be brief.',
  model: 'mock-1',
  baseURL: 'http://127.0.0.1:1/v1',
  historyTurns: 2,
};

const USAGE = {
  inputTokens: { total: 7, noCache: 7, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
};

function streamOf(pieces: string[]) {
  return simulateReadableStream({
    chunks: [
      { type: 'text-start' as const, id: 't' },
      ...pieces.map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
      { type: 'text-end' as const, id: 't' },
      { type: 'finish' as const, finishReason: { unified: 'stop' as const, raw: undefined }, usage: USAGE },
    ],
  });
}

function context(overrides: Partial<RunContext> = {}): RunContext & { emitted: string[]; usage: ModelUsage[] } {
  const emitted: string[] = [];
  const usage: ModelUsage[] = [];
  return {
    runId: 'r',
    sessionId: 's',
    userId: null,
    message: 'now',
    history: [],
    signal: new AbortController().signal,
    checkpoint: async () => undefined,
    emit: (delta) => emitted.push(delta),
    recordUsage: (reported) => usage.push(reported),
    // modelAgent keeps no memories.
    memories: null as never,
    span: () => ({ set: () => undefined, end: () => undefined }),
    emitted,
    usage,
    ...overrides,
  };
}

/** A model whose provider answers with an HTTP error, as the AI SDK reports one. */
function answering(statusCode: number, responseBody: string): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doStream: async () => {
      throw new APICallError({
        message: 'Provider error',
        url: 'http://x/v1/chat/completions',
        requestBodyValues: {},
        statusCode,
        responseBody,
      });
    },
  });
}

describe('modelAgent (with the AI SDK test model)', () => {
  it('emits each delta, returns the whole text and records usage', async () => {
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: streamOf(['Hi', ' there']) }) });
    const ctx = context();
    expect(await runModelAgent(model, OPTIONS, ctx)).toBe('Hi there');
    expect(ctx.emitted).toEqual(['Hi', ' there']);
    expect(ctx.usage).toEqual([{ model: 'mock-1', inputTokens: 7, outputTokens: 3 }]);
  });

  it('sends the instructions, the latest historyTurns turns (a message and its answer each) and the message', async () => {
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: streamOf(['ok']) }) });
    const history: Turn[] = [
      { role: 'user', content: 'old' },
      { role: 'assistant', content: 'old answer' },
      { role: 'user', content: 'earlier' },
      { role: 'assistant', content: 'earlier answer' },
      { role: 'user', content: 'recent' },
      { role: 'assistant', content: 'recent answer' },
    ];
    await runModelAgent(model, OPTIONS, context({ history }));
    const prompt = model.doStreamCalls[0].prompt.map((message) => ({
      role: message.role,
      text:
        typeof message.content === 'string' ? message.content : message.content.map((part) => ('text' in part ? part.text : '')).join(''),
    }));
    expect(prompt).toEqual([
      { role: 'system', text: 'Be brief.' },
      { role: 'user', text: 'earlier' },
      { role: 'assistant', text: 'earlier answer' },
      { role: 'user', text: 'recent' },
      { role: 'assistant', text: 'recent answer' },
      { role: 'user', text: 'now' },
    ]);
  });

  it('names the provider status when the call fails', async () => {
    const model = answering(429, '{"error":"slow down"}');
    await expect(runModelAgent(model, OPTIONS, context())).rejects.toThrow(
      'Model provider answered HTTP 429 (http://127.0.0.1:1/v1): {"error":"slow down"}',
    );
  });

  it('never shows a key the base URL carries in its query, as some providers take it', async () => {
    const model = answering(401, 'bad key');
    const keyed = { ...OPTIONS, baseURL: 'http://127.0.0.1:1/v1?api-version=2024-10-21&api-key=query-key-0123456789' };
    await expect(runModelAgent(model, keyed, context())).rejects.toThrow(
      'Model provider answered HTTP 401 (http://127.0.0.1:1/v1?api-version=[redacted]&api-key=[redacted]): bad key',
    );
  });

  it('says a stream the provider had started answering broke off, not that it answered HTTP 200', async () => {
    const model = new MockLanguageModelV3({
      doStream: async () => {
        throw new APICallError({
          message: 'Failed to process successful response',
          url: 'http://x/v1/chat/completions',
          requestBodyValues: {},
          statusCode: 200,
          cause: Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } }),
        });
      },
    });
    await expect(runModelAgent(model, OPTIONS, context())).rejects.toThrow(
      "Model provider's answer broke off (http://127.0.0.1:1/v1): UND_ERR_SOCKET",
    );
  });

  it('never shows part of a key the cut at a few hundred characters would go through', async () => {
    const key = 'sk-audit-SECRETKEY-7f3a9c2b1e';
    process.env.MODEL_AGENT_SPEC_KEY = key;
    try {
      // The key starts 27 characters before the cut: cut first, its first 27 characters would show.
      const model = answering(500, `${'P'.repeat(273)}${key} is not allowed`);
      const failure = await runModelAgent(model, { ...OPTIONS, apiKeyEnv: 'MODEL_AGENT_SPEC_KEY' }, context()).catch(
        (error: Error) => error.message,
      );
      expect(failure).toMatch(/^Model provider answered HTTP 500 \(http:\/\/127\.0\.0\.1:1\/v1\): P{273}\[redacted\] is not allowed$/);
      expect(failure).not.toContain(key.slice(0, 10));
    } finally {
      delete process.env.MODEL_AGENT_SPEC_KEY;
    }
  });

  it('words an error the provider streams as its JSON (an object, not an Error) by its message, clipped', async () => {
    const erring = (error: unknown) =>
      new MockLanguageModelV3({
        doStream: async () => ({ stream: simulateReadableStream({ chunks: [{ type: 'error' as const, error }] }) }),
      });
    await expect(runModelAgent(erring({ error: { message: 'upstream overloaded' } }), OPTIONS, context())).rejects.toThrow(
      'Model provider reported an error (http://127.0.0.1:1/v1): upstream overloaded',
    );
    const huge = await runModelAgent(erring(new Error(`JSON parsing failed: ${'z'.repeat(3_000_000)}`)), OPTIONS, context()).catch(
      (error: Error) => error.message,
    );
    expect(huge.startsWith("Model provider's answer could not be read (http://127.0.0.1:1/v1): JSON parsing failed: zzz")).toBe(true);
    expect(huge.length).toBeLessThan(400);
  });

  it('never names a key pasted where the variable’s name goes when that variable is unset', async () => {
    const model = new MockLanguageModelV3({ doStream: async () => ({ stream: streamOf(['never']) }) });
    const pasted = { ...OPTIONS, apiKeyEnv: 'gsk_PastedGroqKeyAbcdef0123456789XYZ' };
    const failed = await runModelAgent(model, pasted, context()).catch((error: Error) => error.message);
    expect(failed).toBe(
      "The model's API key is missing: the variable apiKeyEnv names is not set in the environment of this process (export it before starting; a .env file is not read: set -a; . ./.env; set +a loads one)",
    );
    expect(model.doStreamCalls).toHaveLength(0);
    // A name as variables are written is named: the operator sees which to set.
    const named = await runModelAgent(model, { ...OPTIONS, apiKeyEnv: 'UNSET_PROVIDER_KEY' }, context()).catch(
      (error: Error) => error.message,
    );
    expect(named).toBe(
      "The model's API key is missing: UNSET_PROVIDER_KEY is not set in the environment of this process (export it before starting; a .env file is not read: set -a; . ./.env; set +a loads one)",
    );
  });

  it('ends as a cancellation, not a failure, when the run’s signal aborts', async () => {
    const controller = new AbortController();
    const model = new MockLanguageModelV3({
      doStream: async ({ abortSignal }) => ({
        stream: new ReadableStream({
          start(stream) {
            stream.enqueue({ type: 'text-start', id: 't' });
            stream.enqueue({ type: 'text-delta', id: 't', delta: 'partial' });
            abortSignal?.addEventListener('abort', () => stream.error(abortSignal.reason));
            controller.abort(new RunCancelled('Run was cancelled'));
          },
        }),
      }),
    });
    await expect(runModelAgent(model, OPTIONS, context({ signal: controller.signal }))).rejects.toBeInstanceOf(RunCancelled);
  });

  it('refuses options without the required fields', () => {
    expect(() => modelAgent({ ...OPTIONS, baseURL: '' })).toThrow('modelAgent needs baseURL');
  });

  it('refuses at load options that would fail every run: a base URL without http(s), bad numbers', () => {
    expect(() => modelAgent({ ...OPTIONS, baseURL: 'localhost:11434' })).toThrow(/baseURL must be an http\(s\) URL/);
    // fetch refuses a URL with credentials: every run would fail. Not repeated in the refusal.
    const withPassword = () => modelAgent({ ...OPTIONS, baseURL: 'http://user:hunter2-secret@127.0.0.1:1/v1' });
    expect(withPassword).toThrow('baseURL must not hold a user or password');
    expect(withPassword).not.toThrow(/hunter2/);
    expect(() => modelAgent({ ...OPTIONS, temperature: 'hot' as never })).toThrow('temperature must be a number from 0');
    expect(() => modelAgent({ ...OPTIONS, timeoutSeconds: 0 })).toThrow('timeoutSeconds must be a number of seconds above 0');
    expect(() => modelAgent({ ...OPTIONS, timeoutSeconds: -5 })).toThrow('timeoutSeconds must be');
    expect(() => modelAgent({ ...OPTIONS, historyTurns: 1.5 })).toThrow('historyTurns must be a whole number from 0');
    expect(() => modelAgent({ ...OPTIONS, maxOutputTokens: 0 })).toThrow('maxOutputTokens must be a whole number above 0');
    expect(() => modelAgent({ ...OPTIONS, temperature: 0.2, timeoutSeconds: 30, historyTurns: 0, maxOutputTokens: 256 })).not.toThrow();
  });

  it('refuses a key given where its variable’s name goes, without repeating it', () => {
    const load = () => modelAgent({ ...OPTIONS, apiKeyEnv: 'sk-proj-0123456789abcdef' });
    expect(load).toThrow(/apiKeyEnv names the environment variable that holds the key/);
    expect(load).not.toThrow(/sk-proj/);
    expect(() => modelAgent({ ...OPTIONS, apiKeyEnv: 'OPENAI_API_KEY' })).not.toThrow();
  });
});

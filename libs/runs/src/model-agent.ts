import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, FinishReason, LanguageModel, LanguageModelUsage, ModelMessage, streamText } from 'ai';

import { SPAN } from '@app/traces';
import { clipped } from '@app/validation';

import type { ModelAgentOptions } from './authoring';
import { Component, ModelUsage, RunCancelled, RunContext } from './component';

const DEFAULT_HISTORY_TURNS = 10;
const DEFAULT_TIMEOUT_SECONDS = 300;
const MAX_PROVIDER_TEXT = 300;
/** A model's answer is a run's content and the next turn's history: past this, the run fails rather than hold it. */
const MAX_ANSWER_CHARS = 1_000_000;
/** Shorter values are not taken for secrets: replacing them would garble the text around them. */
const MIN_SECRET_CHARS = 8;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A variable's name as they are written (OPENAI_API_KEY): safe to show in an error, unlike a key pasted in its place. */
const CONVENTIONAL_ENV_NAME = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;

/** A call this side stopped, said as it is rather than as something the provider did. */
class CallStopped extends Error {}

export function modelAgent(options: ModelAgentOptions): Component {
  assertOptions(options);
  const provider = createOpenAICompatible({
    name: 'model-agent',
    baseURL: options.baseURL,
    // The variable is named by the deployment's own module, not a platform setting, so it is read here.
    apiKey: apiKeyOf(options),
    includeUsage: true,
    fetch: fetchWithBoundedErrors,
  });
  const model = provider.chatModel(options.model);
  return {
    kind: 'agent',
    id: options.id,
    name: options.name ?? options.id,
    description: options.description ?? `Model agent (${options.model})`,
    // Said at boot too (by the registry), where the operator who forgot to export it is looking, not only in a run's error.
    ...(options.apiKeyEnv && !apiKeyOf(options) ? { bootWarning: `${missingKey(options)}; its runs fail until it is set` } : {}),
    run: (context) => runModelAgent(model, options, context),
  };
}

/** How much of a provider's error body is read: a run shows a few hundred characters of it. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * fetch, with an error response's body cut at MAX_ERROR_BODY_BYTES and the rest not read: the AI SDK reads an
 * error body whole, and a provider (or a proxy in front of it) answering 400 MB grew the api past 1.7 GB.
 */
async function fetchWithBoundedErrors(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await fetch(input, init);
  if (response.ok || response.body === null) {
    return response;
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < MAX_ERROR_BODY_BYTES) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel().catch(() => undefined);
  const headers = new Headers(response.headers);
  // The body is fetch's decoded text, cut: its length and encoding headers no longer describe it.
  ['content-length', 'content-encoding'].forEach((name) => headers.delete(name));
  return new Response(Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY_BYTES), {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

/**
 * One model call for one run: the instructions, the session's latest turns and the message go to the
 * model; text is emitted as it streams; usage is recorded; cancellation aborts the HTTP request. The
 * AI SDK's own retries are off: the job's attempts decide whether a failed run is tried again.
 */
export async function runModelAgent(model: LanguageModel, options: ModelAgentOptions, context: RunContext): Promise<string> {
  // OpenTelemetry's GenAI attribute names, so collectors show the call as a model call; and the names the run's
  // body gives the same figures (model, input_tokens, output_tokens), for a reader of GET /traces.
  const span = context.span(SPAN.modelCall, {
    'gen_ai.system': 'openai_compatible',
    'gen_ai.request.model': options.model,
    model: options.model,
  });
  try {
    const { content, usage, finishReason } = await callModel(model, options, context);
    span.set({
      // `length`: the answer was cut at maxOutputTokens (the run still completes, with what the model wrote).
      'gen_ai.response.finish_reasons': finishReason,
      finish_reason: finishReason,
      ...(usage.inputTokens === null ? {} : { 'gen_ai.usage.input_tokens': usage.inputTokens, input_tokens: usage.inputTokens }),
      ...(usage.outputTokens === null ? {} : { 'gen_ai.usage.output_tokens': usage.outputTokens, output_tokens: usage.outputTokens }),
    });
    span.end();
    context.recordUsage(usage);
    return content;
  } catch (error) {
    span.end(error);
    throw error;
  }
}

async function callModel(
  model: LanguageModel,
  options: ModelAgentOptions,
  context: RunContext,
): Promise<{ content: string; usage: ModelUsage; finishReason: FinishReason }> {
  if (options.apiKeyEnv && !apiKeyOf(options)) {
    // Sent without it, the call fails as the provider words it (or succeeds on a server that wants none) and names nothing.
    throw new Error(`The model's API key is missing: ${missingKey(options)}`);
  }
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  const timeout = AbortSignal.timeout(timeoutSeconds * 1000);
  const tooLong = new AbortController();
  const turns = options.historyTurns ?? DEFAULT_HISTORY_TURNS;
  // A turn is an exchange: the user's message and the answer (history holds them in pairs).
  const messages: ModelMessage[] = [...(turns > 0 ? context.history.slice(-turns * 2) : []), { role: 'user', content: context.message }];
  const result = streamText({
    model,
    system: options.instructions,
    messages,
    maxOutputTokens: options.maxOutputTokens,
    temperature: options.temperature,
    maxRetries: 0,
    abortSignal: AbortSignal.any([context.signal, timeout, tooLong.signal]),
    // Errors arrive as stream parts and fail the run below; the SDK's default would print them to stderr.
    onError: () => undefined,
  });
  let content = '';
  let usage: LanguageModelUsage | undefined;
  let finishReason: FinishReason = 'other';
  try {
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') {
        content += part.text;
        if (content.length > MAX_ANSWER_CHARS) {
          tooLong.abort();
          throw new CallStopped(`The model's answer passed ${MAX_ANSWER_CHARS} characters: the call was stopped`);
        }
        context.emit(part.text);
      } else if (part.type === 'finish') {
        usage = part.totalUsage;
        finishReason = part.finishReason;
      } else if (part.type === 'error') {
        throw part.error;
      } else if (part.type === 'abort') {
        throw new DOMException('aborted', 'AbortError');
      }
    }
  } catch (error) {
    throw describeFailure(error, options, context.signal, timeout, timeoutSeconds);
  }
  return {
    content,
    usage: { model: options.model, inputTokens: usage?.inputTokens ?? null, outputTokens: usage?.outputTokens ?? null },
    finishReason,
  };
}

/** Every option, checked at load: wrong, they would fail every run with a message about something else. */
function assertOptions(options: ModelAgentOptions): void {
  for (const field of ['id', 'instructions', 'model', 'baseURL'] as const) {
    if (typeof options?.[field] !== 'string' || options[field] === '') {
      throw new Error(`modelAgent needs ${field} (a non-empty string)`);
    }
  }
  const refuse = (what: string) => {
    throw new Error(`modelAgent '${options.id}': ${what}`);
  };
  let url: URL | null = null;
  try {
    url = new URL(options.baseURL);
  } catch {
    // refused below
  }
  if (!url || !['http:', 'https:'].includes(url.protocol)) {
    refuse('baseURL must be an http(s) URL, such as http://127.0.0.1:11434/v1');
  }
  if (url!.username || url!.password) {
    // fetch refuses such a URL, so every run would fail; never echoed, as it holds a credential.
    refuse('baseURL must not hold a user or password: put the key in the variable apiKeyEnv names');
  }
  if (options.apiKeyEnv !== undefined && !ENV_NAME.test(options.apiKeyEnv)) {
    // Never echoed: what was given may be the key itself.
    refuse('apiKeyEnv names the environment variable that holds the key (OPENAI_API_KEY, say), not the key');
  }
  const numbers: [keyof ModelAgentOptions, (value: number) => boolean, string][] = [
    ['temperature', (value) => value >= 0, 'a number from 0'],
    ['maxOutputTokens', (value) => Number.isInteger(value) && value > 0, 'a whole number above 0'],
    ['historyTurns', (value) => Number.isInteger(value) && value >= 0, 'a whole number from 0'],
    ['timeoutSeconds', (value) => value > 0, 'a number of seconds above 0'],
  ];
  for (const [field, valid, what] of numbers) {
    const value = options[field];
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || !valid(value))) {
      refuse(`${field} must be ${what}`);
    }
  }
}

/**
 * The unset key variable, and how to set it: the service reads no .env file of its own. Named only when it reads as a
 * variable's name: a key pasted into apiKeyEnv can look like one (gsk_..., hf_...).
 */
function missingKey(options: ModelAgentOptions): string {
  const variable = CONVENTIONAL_ENV_NAME.test(options.apiKeyEnv ?? '') ? options.apiKeyEnv : 'the variable apiKeyEnv names';
  return `${variable} is not set in the environment of this process (export it before starting; a .env file is not read: set -a; . ./.env; set +a loads one)`;
}

function apiKeyOf(options: ModelAgentOptions): string | undefined {
  return options.apiKeyEnv ? process.env[options.apiKeyEnv] || undefined : undefined;
}

/**
 * A failure the run's error can show: the provider's status, a timeout, or the connection problem. It
 * goes to the run, the job, logs and spans, so the key and the base URL's credentials never do: some
 * providers quote the key they refused.
 */
function describeFailure(
  error: unknown,
  options: ModelAgentOptions,
  cancel: AbortSignal,
  timeout: AbortSignal,
  timeoutSeconds: number,
): Error {
  if (cancel.aborted) {
    return cancel.reason instanceof Error ? cancel.reason : new RunCancelled();
  }
  return new Error(redacted(providerFailure(error, options, timeout, timeoutSeconds), options));
}

function providerFailure(error: unknown, options: ModelAgentOptions, timeout: AbortSignal, timeoutSeconds: number): string {
  if (timeout.aborted) {
    return `Model provider timed out after ${timeoutSeconds}s (${options.baseURL})`;
  }
  if (error instanceof CallStopped) {
    return error.message;
  }
  if (APICallError.isInstance(error)) {
    const cause = error.cause as { code?: string; message?: string; cause?: { code?: string } } | undefined;
    if (error.statusCode !== undefined && error.statusCode < 300) {
      // A stream the provider had started answering, cut (a connection reset): no error status to name.
      return `Model provider's answer broke off (${options.baseURL}): ${cause?.code ?? cause?.cause?.code ?? shown(cause?.message ?? error.message, options)}`;
    }
    if (error.statusCode !== undefined) {
      return `Model provider answered HTTP ${error.statusCode} (${options.baseURL}): ${shown(error.responseBody ?? error.message, options)}`;
    }
    return `Model provider unreachable at ${options.baseURL}: ${cause?.code ?? cause?.cause?.code ?? error.message}`;
  }
  // What the SDK could not make of the answer (a line that is not JSON, a stream ending without a finish), clipped:
  // a broken stream part can quote megabytes.
  if (error instanceof Error) {
    return `Model provider's answer could not be read (${options.baseURL}): ${shown(error.message, options)}`;
  }
  // An error part of the stream is the provider's JSON: {message} or {error: {message}}.
  const reported = error as { message?: unknown; error?: { message?: unknown } } | null;
  const message = [reported?.message, reported?.error?.message].find((text) => typeof text === 'string') ?? JSON.stringify(error);
  return `Model provider reported an error (${options.baseURL}): ${shown(String(message), options)}`;
}

/** The text without the API key or what in the base URL may be one (see urlCredentials). */
function redacted(text: string, options: ModelAgentOptions): string {
  const secrets = [apiKeyOf(options), ...urlCredentials(options.baseURL)].filter(
    (secret): secret is string => secret !== undefined && secret.length >= MIN_SECRET_CHARS,
  );
  return secrets.reduce((shown, secret) => shown.split(secret).join('[redacted]'), text);
}

/** What in a base URL may be a credential: its user and password, and its query's values (`?api-key=`, as some providers take). */
function urlCredentials(url: string): string[] {
  try {
    const { username, password, searchParams } = new URL(url);
    return [password, decodeURIComponent(password), username, decodeURIComponent(username), ...searchParams.values()];
  } catch {
    return [];
  }
}

/**
 * What the provider said, as a run's error may show it: redacted first, then cut, since a key the cut
 * went through would no longer match as a whole, and its first part would show.
 */
function shown(text: string, options: ModelAgentOptions): string {
  return clipped(redacted(text, options).replace(/\s+/g, ' ').trim(), MAX_PROVIDER_TEXT);
}

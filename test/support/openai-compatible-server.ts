import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

/** What the stand-in does with the next chat completion. */
export interface CompletionScript {
  /** Content pieces streamed as separate chunks. */
  chunks?: string[];
  /** Wait between chunks. */
  chunkDelayMs?: number;
  /** After the chunks, keep the response open until the client goes away (a long generation). */
  hang?: boolean;
  /** Answer this HTTP status with an OpenAI-style error body instead of a stream. */
  status?: number;
  /** The error body's message (default `stand-in error <status>`): some providers quote the key they refused. */
  errorMessage?: string;
  /** With `status`: an error body of about this many bytes, written slowly (see handle). */
  slowErrorBytes?: number;
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** The last chunk's finish_reason (default `stop`; `length` is an answer cut at max_tokens). */
  finishReason?: string;
}

export interface RecordedRequest {
  authorization: string | undefined;
  body: { model: string; stream: boolean; messages: { role: string; content: string }[]; [key: string]: unknown };
}

/**
 * An OpenAI-compatible chat-completions server on loopback, speaking the real wire protocol: SSE
 * `data:` lines of `chat.completion.chunk` objects, a final usage chunk (stream_options.include_usage),
 * then `data: [DONE]`. Tests script each answer and see every request, and when each chunk left.
 */
export class OpenAiCompatibleServer {
  readonly requests: RecordedRequest[] = [];
  /** Per chunk sent: when it was written (performance.now() in this process). */
  readonly chunkSentAt: number[] = [];
  private readonly scripts: CompletionScript[] = [];
  private server: Server | null = null;
  private closedConnections = 0;

  /** Queues the answer to a coming request; without one, a request gets `Hello!`. */
  next(script: CompletionScript): this {
    this.scripts.push(script);
    return this;
  }

  /** How many streamed responses ended because the client closed the connection. */
  get clientDisconnects(): number {
    return this.closedConnections;
  }

  async listen(): Promise<string> {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v1`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of request) {
      raw += chunk;
    }
    if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const body = JSON.parse(raw) as RecordedRequest['body'];
    this.requests.push({ authorization: request.headers.authorization, body });
    const script = this.scripts.shift() ?? { chunks: ['Hello!'] };
    if (script.status && script.slowErrorBytes) {
      // A long error body, written 64 KiB every 50 ms: a client reading it whole waits for all of it.
      response.writeHead(script.status, { 'content-type': 'application/json' });
      response.write(`{"error":{"message":"`);
      for (let written = 0; written < script.slowErrorBytes && !response.destroyed; written += 65_536) {
        response.write('x'.repeat(65_536));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      response.end(`"}}`);
      return;
    }
    if (script.status) {
      response.writeHead(script.status, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: { message: script.errorMessage ?? `stand-in error ${script.status}`, type: 'server_error', code: null },
        }),
      );
      return;
    }
    let open = true;
    response.on('close', () => {
      if (!response.writableFinished) {
        this.closedConnections += 1;
      }
      open = false;
    });
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const base = { id: 'chatcmpl-standin', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model };
    const send = (data: unknown) => response.write(`data: ${JSON.stringify(data)}\n\n`);
    const chunks = script.chunks ?? ['Hello!'];
    for (const [index, piece] of chunks.entries()) {
      if (!open) {
        return;
      }
      if (index > 0 && script.chunkDelayMs) {
        await new Promise((resolve) => setTimeout(resolve, script.chunkDelayMs));
      }
      send({
        ...base,
        choices: [{ index: 0, delta: index === 0 ? { role: 'assistant', content: piece } : { content: piece }, finish_reason: null }],
      });
      this.chunkSentAt.push(performance.now());
    }
    if (script.hang) {
      return;
    }
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: script.finishReason ?? 'stop' }] });
    const usage = script.usage ?? { prompt_tokens: 10, completion_tokens: chunks.length };
    send({ ...base, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
    response.end('data: [DONE]\n\n');
  }
}

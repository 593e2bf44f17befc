import { FastifyReply } from 'fastify';

import { INTERNAL_ERROR_BODY } from '@app/errors';
import { keepStreamAlive, RunEvent } from '@app/runs';

import { renderError } from '../errors/render-error';

function frame(event: RunEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/**
 * Answers text/event-stream. The response starts with the first event, so an error before
 * it (unknown component, bad session) still reaches the client as an ordinary error body;
 * an error after it ends the stream with a RunError event.
 */
export async function sendEventStream(reply: FastifyReply, produce: (send: (event: RunEvent) => void) => Promise<void>): Promise<void> {
  let started = false;
  let stopKeepalive = (): void => undefined;
  const send = (event: RunEvent): void => {
    if (!started) {
      started = true;
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-request-id': String(reply.request.id),
      });
      stopKeepalive = keepStreamAlive((chunk) => reply.raw.write(chunk));
    }
    reply.raw.write(frame(event));
  };
  try {
    await produce(send);
  } catch (error) {
    if (!started) {
      throw error;
    }
    // The error body's words, as a response not yet started would have had them (a database outage is not an internal error).
    const { detail } = renderError(error, { method: reply.request.method, url: reply.request.url }).body;
    reply.raw.write(frame({ event: 'RunError', data: { error: typeof detail === 'string' ? detail : INTERNAL_ERROR_BODY.detail } }));
  } finally {
    stopKeepalive();
  }
  reply.raw.end();
}

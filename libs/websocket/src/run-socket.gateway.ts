import { IncomingHttpHeaders } from 'node:http';

import fastifyWebsocket from '@fastify/websocket';
import { Inject, Injectable, Provider, Type } from '@nestjs/common';
import { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PinoLogger } from 'nestjs-pino';

import { Authenticator, credentialsOf } from '@app/auth';
import { Env, isAllowedOrigin } from '@app/config';
import { ErrorRenderer } from '@app/errors';
import { RunsService } from '@app/runs';

import { RunSocket } from './run-socket';

export const WEBSOCKET_PATH = '/ws';
/** RFC 6455's token characters, for the Sec-WebSocket-Protocol list. */
const PROTOCOLS = /^\s*[!#$%&'*+\-.^_`|~0-9A-Za-z]+(\s*,\s*[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*\s*$/;

/**
 * What the ws library would refuse in an upgrade request, checked first: ws answers such a handshake with a
 * text/html 400 of its own, every other refusal here is the standard error body.
 */
function handshakeProblem(headers: IncomingHttpHeaders): string | null {
  if (headers.upgrade?.toLowerCase() !== 'websocket') {
    return 'Invalid Upgrade header: expected websocket';
  }
  if (!/^[+/0-9A-Za-z]{22}==$/.test(headers['sec-websocket-key'] ?? '')) {
    return 'Missing or invalid Sec-WebSocket-Key header';
  }
  if (!['8', '13'].includes(headers['sec-websocket-version'] ?? '')) {
    return 'Missing or invalid Sec-WebSocket-Version header: 13 (or 8)';
  }
  const protocols = headers['sec-websocket-protocol'];
  return protocols === undefined || PROTOCOLS.test(protocols) ? null : 'Invalid Sec-WebSocket-Protocol header';
}
const WS_ERROR_RENDERER = Symbol('WsErrorRenderer');

/**
 * Mounts /ws on the api's Fastify instance with @fastify/websocket. The route is Fastify's own (Nest has
 * no WebSocket routes on Fastify); its onRequest hooks (security headers, an open instance's Host rule)
 * still run for the upgrade. A plain GET answers 426. CORS does not cover WebSockets, so a browser page
 * of another origin is refused here (403) before the upgrade, as /mcp refuses it.
 */
@Injectable()
export class RunSocketGateway {
  constructor(
    private readonly env: Env,
    private readonly authenticator: Authenticator,
    private readonly runs: RunsService,
    @Inject(WS_ERROR_RENDERER) private readonly errors: ErrorRenderer,
  ) {}

  async register(fastify: FastifyInstance, maxFrameBytes: number): Promise<void> {
    // At the api's stop each socket is told so (1001 Going Away: reconnect elsewhere), before the plugin's own
    // close, which sends no code (1005) that a client could tell from a broken connection. Added first, runs first.
    fastify.addHook('preClose', (done) => {
      for (const client of fastify.websocketServer?.clients ?? []) {
        client.close(1001, 'Server shutting down');
      }
      done();
    });
    await fastify.register(fastifyWebsocket, { options: { maxPayload: maxFrameBytes } });
    const services = { authenticator: this.authenticator, runs: this.runs, errors: this.errors };
    fastify.route({
      method: 'GET',
      url: WEBSOCKET_PATH,
      preValidation: async (request: FastifyRequest, reply: FastifyReply) => {
        if (!isAllowedOrigin(request.headers.origin, this.env.publicUrl)) {
          await reply.code(403).send({ detail: 'Origin not allowed' });
          return;
        }
        const problem = request.headers.upgrade === undefined ? null : handshakeProblem(request.headers);
        if (problem) {
          await reply.code(400).send({ detail: problem });
        }
      },
      handler: (_request, reply) => reply.status(426).header('upgrade', 'websocket').send({ detail: 'Upgrade to a WebSocket to use /ws' }),
      wsHandler: (socket, request) =>
        // The socket's events do not run in the request's logging context: its logger names the request itself.
        new RunSocket(socket, credentialsOf(request), services, PinoLogger.root.child({ request_id: request.id })).start(),
    });
  }
}

/** The gateway, provided in the app's module beside its RunsModule; the app says how errors read. */
export function websocketProviders(errorRenderer: Type<ErrorRenderer>): Provider[] {
  return [RunSocketGateway, { provide: WS_ERROR_RENDERER, useClass: errorRenderer }];
}

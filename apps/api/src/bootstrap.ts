import { randomUUID } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';

import multipart from '@fastify/multipart';
import { HttpStatus, PayloadTooLargeException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { parse as parseQuery } from 'fast-querystring';
import { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PinoLogger } from 'nestjs-pino';

import { describePrincipal } from '@app/access';
import { AuthenticatedRequest, authMode } from '@app/auth';
import { Env } from '@app/config';
import { RequestErrorCode, RequestException } from '@app/errors';
import { MetricsRegistry } from '@app/health';
import { AppLogger, bootLogger, logRequests } from '@app/logging';
import { Component } from '@app/runs';
import { RunSocketGateway } from '@app/websocket';

import { ApiModule } from './api.module';
import { FRAMEWORK_DETAILS } from './errors/render-error';
import { addSecurityHeaders, registerHttpSurface } from './http-surface';
import { recordRequestDurations } from './metrics/http-metrics';
import { mountDocs, TAKES_BODY } from './openapi';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
const BODY_LIMIT_BYTES = 1024 * 1024;
/**
 * Fastify's default (100 characters) is shorter than the ids the api hands out and accepts (session and
 * component ids go to 128), and a longer id can name nothing, which its route answers with 404. Only a
 * parameter longer than this is refused before routing (414).
 */
const MAX_PATH_PARAM_LENGTH = 1024;

/** The routes that start runs: the only ones that take form fields as multipart too. */
const RUN_ROUTE = /^\/(agents|teams|workflows)\/:[a-z_]+\/runs$/;

/**
 * A run's form fields (`message`, `stream`, ...) may come as multipart/form-data, as FastAPI-style clients
 * send them, as well as urlencoded: @fastify/multipart reads the fields, and they become the body the same DTO
 * validates. Files are not taken (415); a body that is not valid multipart is a 400; every other route
 * answers multipart with 415. A field left blank in a form is not given, as FastAPI reads forms, so its
 * default applies (a form that sends every field, as Swagger UI's does, may leave `session_id` empty).
 *
 * Nest parses urlencoded forms on every route, but only the run routes take them; any other POST, PUT or PATCH route
 * answers a form with fields as it documents, 415 (an empty one is no body at all). JSON sent without its Content-Type arrives
 * as a form whose one field is named by the JSON text, and every field the route wanted is "missing": it is
 * answered as what it is (415, saying what to send). Both in the same hook: no extra one on every request.
 */
async function acceptForms(fastify: FastifyInstance): Promise<void> {
  await fastify.register(multipart, { limits: { files: 0, fields: 32, parts: 32, fieldSize: BODY_LIMIT_BYTES } });
  fastify.addHook('preValidation', async (request, reply) => {
    if (!request.isMultipart()) {
      const urlencoded = request.headers['content-type']?.toLowerCase().startsWith(URLENCODED);
      if (!urlencoded || !isFields(request.body)) {
        return;
      }
      const fields = Object.keys(request.body);
      if (fields.some((name) => /^\s*[{[]/.test(name))) {
        await reply.code(415).send({ detail: JSON_SENT_AS_FORM });
      } else if (RUN_ROUTE.test(request.routeOptions.url ?? '')) {
        request.body = withoutBlanks(request.body);
      } else if (fields.length > 0 && TAKES_BODY.has(request.method) && request.routeOptions.url) {
        await reply.code(415).send({ detail: FRAMEWORK_DETAILS.FST_ERR_CTP_INVALID_MEDIA_TYPE });
      }
      return;
    }
    if (!RUN_ROUTE.test(request.routeOptions.url ?? '')) {
      await reply.code(415).send({ detail: FRAMEWORK_DETAILS.FST_ERR_CTP_INVALID_MEDIA_TYPE });
      return;
    }
    const fields: Record<string, unknown> = {};
    let bytes = 0;
    try {
      for await (const part of request.parts()) {
        if (part.type !== 'field') {
          continue;
        }
        // busboy cuts a field at fieldSize without failing: a cut field, or fields over the body limit in
        // all, are refused as a JSON body of that size would be, never taken shortened.
        bytes += Buffer.byteLength(String(part.value));
        if (part.valueTruncated || bytes > BODY_LIMIT_BYTES) {
          throw new PayloadTooLargeException(FRAMEWORK_DETAILS.FST_ERR_CTP_BODY_TOO_LARGE);
        }
        fields[part.fieldname] = part.value;
      }
    } catch (error) {
      if (error instanceof PayloadTooLargeException) {
        throw error;
      }
      const { statusCode, code } = error as { statusCode?: number; code?: string };
      if (code === 'FST_FILES_LIMIT') {
        // A file part is a kind of part the route does not take, not a body too large (the limit's own 413).
        await reply.code(HttpStatus.UNSUPPORTED_MEDIA_TYPE).send({ detail: FRAMEWORK_DETAILS.FST_FILES_LIMIT });
        return;
      }
      if (statusCode === HttpStatus.PAYLOAD_TOO_LARGE) {
        throw new PayloadTooLargeException(FRAMEWORK_DETAILS[code ?? ''] ?? FRAMEWORK_DETAILS.FST_ERR_CTP_BODY_TOO_LARGE);
      }
      throw new RequestException(RequestErrorCode.BadRequest, `Malformed multipart body: ${(error as Error).message}`);
    }
    request.body = withoutBlanks(fields);
  });
}

const URLENCODED = 'application/x-www-form-urlencoded';

const JSON_SENT_AS_FORM =
  'The body is JSON sent as a form (Content-Type: application/x-www-form-urlencoded, what curl -d sends unless told ' +
  "otherwise): send it with Content-Type: application/json (curl: -H 'Content-Type: application/json')";

function isFields(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}

function withoutBlanks(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== ''));
}

const CLIENT_ERRORS: Record<string, [status: string, detail: string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: ['408 Request Timeout', 'Request timed out'],
  HPE_HEADER_OVERFLOW: ['431 Request Header Fields Too Large', 'Request headers are too large'],
};

/**
 * A request Node's HTTP parser refuses (NUL or another control character in a header, a broken request
 * line) never reaches a route: it gets the standard error body rather than Fastify's own shape.
 */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) {
    return;
  }
  const [status, detail] = CLIENT_ERRORS[error.code ?? ''] ?? ['400 Bad Request', 'Malformed HTTP request'];
  const body = JSON.stringify({ detail });
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** How often a closing api ends the connections whose last response has gone out. */
const IDLE_SWEEP_MS = 100;

/**
 * A stopping api ends each connection as soon as it is idle. Closing the server ends the connections
 * idle at that moment; one whose response was still in flight becomes idle only later, and a client that
 * keeps connections alive (a load balancer, an SDK, fetch) would hold the process open until it hung up:
 * a rolling update waited for the orchestrator's kill, and the shutdown hooks after the HTTP close never ran.
 */
function closeConnectionsAsTheyIdle(fastify: FastifyInstance): void {
  fastify.addHook('preClose', (done) => {
    const sweep = setInterval(() => fastify.server.closeIdleConnections(), IDLE_SWEEP_MS).unref();
    // The server's own 'close' comes once its last connection has ended.
    fastify.server.once('close', () => clearInterval(sweep));
    done();
  });
}

/** A list parameter's name as clients write it: `status[]` (axios) or `status[0]` (qs), the name before the brackets. */
const LIST_NAME = /^(.+)\[\d*\]$/;

/**
 * A query string as Fastify reads it (fast-querystring), with `status[]=a&status[]=b` and `status[0]=a&status[1]=b`
 * read as `status=a&status=b`: the bracketed name was an unknown parameter, and a filtered list listed everything.
 */
function queryWithListBrackets(text: string): Record<string, unknown> {
  const query = parseQuery(text) as Record<string, string | string[]>;
  for (const key of Object.keys(query)) {
    const name = LIST_NAME.exec(key)?.[1];
    if (name !== undefined) {
      query[name] = [query[name] ?? [], query[key]].flat();
      delete query[key];
    }
  }
  return query;
}

/** Builds the api (not yet listening): used by main.ts and nothing else needs to know how. */
export async function createApiApp(env: Env, components: Component[] = []): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    // No Nest middleware, so no middie layer on every request: requests are logged by Fastify hooks
    // (logRequests). A Nest middleware added later needs @fastify/middie registered first.
    skipMiddie: true,
    routerOptions: { querystringParser: queryWithListBrackets, maxParamLength: MAX_PATH_PARAM_LENGTH },
    // Keep a caller's request id when it is sane, so logs can be joined across services.
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Router-level rejections (malformed URL, over-long path parameter) never reach Nest's filter.
    // A request Node's parser refuses (a NUL or other control character in a header, a bad request line)
    // never reaches Fastify's routes: answer it with the standard error body instead of Fastify's own.
    clientErrorHandler: answerClientError,
    frameworkErrors: (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
      addSecurityHeaders(reply);
      void reply.status(error.statusCode ?? 400).send({ detail: FRAMEWORK_DETAILS[error.code] ?? FRAMEWORK_DETAILS.FST_ERR_BAD_URL });
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(ApiModule.forRoot(env, components), adapter, {
    // Until AppLogger takes over, Nest's lines (TypeORM's connection retries among them) go out as they happen,
    // in the same format: buffered, a pod retrying its database said nothing for half a minute, then everything
    // at once with one timestamp.
    bufferLogs: false,
    logger: bootLogger(env, 'api'),
    // A failed boot reaches main's one-line report instead of process.abort() (SIGABRT, a core dump).
    abortOnError: false,
  });
  app.useLogger(app.get(AppLogger));
  const fastify = app.getHttpAdapter().getInstance();
  // First, so that every later hook, the route and the exception filter log under the request's id.
  logRequests(fastify, await app.resolve(PinoLogger), (request: AuthenticatedRequest) =>
    request.principal ? describePrincipal(request.principal) : undefined,
  );
  // Security headers, the Host rule of an open instance and empty bodies: first, so every route has them.
  await registerHttpSurface(app, env, authMode(env), BODY_LIMIT_BYTES);
  // Bodies are JSON (runs also take forms); plain text would only reach validation as a string.
  fastify.removeContentTypeParser('text/plain');
  await acceptForms(fastify);
  fastify.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  recordRequestDurations(fastify, app.get(MetricsRegistry));
  closeConnectionsAsTheyIdle(fastify);
  await app.get(RunSocketGateway).register(fastify, BODY_LIMIT_BYTES);
  // Exit (0) once stopped, rather than re-raise the signal: the 'exit' event lets the logger flush the last lines.
  app.enableShutdownHooks(undefined, { useProcessExit: true });
  mountDocs(app, env);
  return app;
}

import { DynamicModule, Injectable, LoggerService, Module } from '@nestjs/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Logger as PinoNestLogger, LoggerModule, PinoLogger } from 'nestjs-pino';
import pino, { Logger, LoggerOptions } from 'pino';

import type { Env } from '@app/config';

/** Credentials never reach a log line, whatever object carries them. */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'password',
  '*.password',
];

/** What a process's logging is configured by. */
export type LogSettings = Pick<Env, 'LOG_LEVEL' | 'LOG_FORMAT'>;

/** JSON for machines; on a terminal (or LOG_FORMAT=pretty), one coloured line per event for people. */
function isPretty(format: LogSettings['LOG_FORMAT']): boolean {
  return format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
}

/**
 * An error as pino writes it (type, message, stack, code and its other fields), less two things:
 * - the client pg-pool hangs on the error of a connection lost while idle: that object holds the connection's
 *   settings and the text of every statement it prepared, kilobytes of a line no operator reads;
 * - a failed statement's parameters (TypeORM's QueryFailedError carries them): they are callers' data, and can
 *   be a secret being stored. The statement's text stays: it says what failed.
 */
export function errorFields(error: unknown): unknown {
  if (!(error instanceof Error)) {
    return error;
  }
  const { client: _client, parameters: _parameters, ...fields } = pino.stdSerializers.err(error) as unknown as Record<string, unknown>;
  return fields;
}

function loggerOptions(settings: LogSettings, service: string): LoggerOptions {
  return {
    level: settings.LOG_LEVEL,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: errorFields },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(isPretty(settings.LOG_FORMAT)
      ? {
          transport: {
            target: 'pino-pretty',
            options: {
              colorize: process.stdout.isTTY === true,
              translateTime: 'SYS:HH:MM:ss.l',
              // An access line says its method, URL, time and caller in its text already (pino-pretty would add a <caller>: prefix).
              ignore: 'pid,hostname,context,method,url,ms,caller',
              messageFormat: '{service} {msg}',
              singleLine: true,
            },
          },
        }
      : {}),
  };
}

/** What an orchestrator or Prometheus polls every few seconds: their access lines only at debug. */
const PROBES = new Set(['/health', '/readyz', '/metrics']);

/** Query parameters that carry a credential in common client conventions (RFC 6750's access_token, signed URLs). */
const CREDENTIAL_PARAMETER =
  /^(?:access_token|refresh_token|id_token|token|api_key|apikey|key|password|secret|client_secret|code|signature|sig)$/i;

/** Values that are credentials by their shape, under any parameter name: this service's tokens, and JWTs. */
const CREDENTIAL_VALUE = /svc_pat_|svc_sch_|eyJ[\w-]*\.eyJ/;

/** A query's name or value as the api reads it ('+' a space, percent-escapes decoded), or as sent when it does not decode. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return text;
  }
}

/**
 * A request URL as logs may keep it. The api takes no credential in a query string, but a client that appends
 * one (`?access_token=`) must not find it in the access log: a parameter named as a credential (percent-escaped
 * or not), or any value shaped as one (`?auth=svc_pat_...`), is replaced, the rest is kept.
 */
export function loggableUrl(url: string): string {
  const query = url.indexOf('?');
  if (query < 0) {
    return url;
  }
  const parameters = url
    .slice(query + 1)
    .split('&')
    .map((parameter) => {
      const equals = parameter.indexOf('=');
      const name = equals < 0 ? parameter : parameter.slice(0, equals);
      const readName = decoded(name);
      if (CREDENTIAL_VALUE.test(readName)) {
        // A token sent as a bare parameter (`?svc_pat_...`).
        return '[redacted]';
      }
      const secret = equals >= 0 && (CREDENTIAL_PARAMETER.test(readName) || CREDENTIAL_VALUE.test(decoded(parameter.slice(equals + 1))));
      return secret ? `${name}=[redacted]` : parameter;
    });
  return `${url.slice(0, query)}?${parameters.join('&')}`;
}

/** The key every line of a request carries its id under. */
const REQUEST_ID = 'request_id';

/**
 * One access line per request, when its response ends (sent, left by the client, upgraded):
 * `GET /config 200 3 ms sa:ci`, with the request id every other line of the request carries, who called
 * (`callerOf`: the authenticated principal, absent when none was) and the peer address; error level for a
 * 5xx only, debug for the probes and /metrics (a 500 of theirs excepted). Nothing of the request's headers is written, so no credential.
 *
 * Fastify's own hooks do it, not pino-http as a Nest middleware: Nest runs middleware through
 * @fastify/middie, and in a CPU profile of background POSTs that layer with pino-http's was about a
 * seventh of the api's JavaScript time. The request's logging context (`PinoLogger.runInContext`, which
 * nestjs-pino's Logger and PinoLogger read) holds one child of the root, bound to the request id, for
 * everything after onRequest: the route, its guards and pipes, and the exception filter.
 */
export function logRequests(
  fastify: FastifyInstance,
  logging: PinoLogger,
  callerOf: (request: FastifyRequest) => string | undefined,
): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    // 'close', not Fastify's onResponse: a response ends in a close whatever becomes of it, also when the
    // client leaves a stream early or the socket is upgraded to a WebSocket, where onResponse never runs.
    reply.raw.once('close', () => {
      const { method } = request;
      const url = loggableUrl(request.url);
      const status = reply.raw.statusCode;
      const ms = Math.round(reply.elapsedTime);
      // A probe's 503 is a state (not ready), said once by the route when it changes; a 500 is a fault.
      const level = PROBES.has(url) && status !== 500 ? 'debug' : status >= 500 ? 'error' : 'info';
      if (!PinoLogger.root.isLevelEnabled(level)) {
        return;
      }
      // The root writes it: the line names the request id itself.
      const caller = callerOf(request);
      PinoLogger.root[level](
        { [REQUEST_ID]: request.id, method, url, status, ms, ...(caller ? { caller } : {}), ip: request.ip },
        `${method} ${url} ${status} ${ms} ms${caller ? ` ${caller}` : ''}`,
      );
    });
    logging.runInContext(done, { bindings: { [REQUEST_ID]: request.id } });
  });
}

/** Nest's own start-up chatter (modules loaded, routes mapped): useful when debugging, noise at info. */
const BOOT_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/**
 * Nest's logging through nestjs-pino: `logger.warn({ err, schedule_id }, 'Schedule claim failed')`
 * logs the object as fields (errors keep type, message and stack), with the request id inside a request.
 * Nest's start-up lines go to debug.
 */
@Injectable()
export class AppLogger extends PinoNestLogger {
  override log(message: unknown, ...params: unknown[]): void {
    const context = params[params.length - 1];
    if (typeof context === 'string' && BOOT_CONTEXTS.has(context)) {
      this.debug(message, ...params);
    } else {
      super.log(message, ...params);
    }
  }
}

type BootLevel = 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal';

function bootPino(settings: LogSettings, service: string): Logger {
  const options = loggerOptions(settings, service);
  return options.transport ? pino(options) : pino(options, pino.destination({ dest: 1, sync: true }));
}

/**
 * Nest's lines while the app is being built, before AppLogger exists: what a boot that fails prints
 * (TypeORM's connection retries, the error that ended it). With the same settings as every later line,
 * one line each, rather than Nest's coloured console text: an error's first line, its stack only at debug.
 * Written synchronously (unless pretty), so they come before the boot failure's own last line. Its pino is
 * made at the first line: a boot that succeeds hands its buffered lines to AppLogger and never makes it (in
 * pretty mode it would start a second transport thread for nothing).
 */
export function bootLogger(settings: LogSettings, service: string): LoggerService {
  let made: Logger | null = null;
  const logger = (): Logger => (made ??= bootPino(settings, service));
  const withStacks = ['debug', 'trace'].includes(settings.LOG_LEVEL);
  const write =
    (level: BootLevel) =>
    (message: unknown, ...params: unknown[]): void => {
      const context = typeof params[params.length - 1] === 'string' ? (params.pop() as string) : undefined;
      const [stack] = params;
      const shown = level === 'info' && context && BOOT_CONTEXTS.has(context) ? 'debug' : level;
      const text = message instanceof Error ? message.message : String(message);
      const error = typeof stack === 'string' ? (withStacks ? { stack } : { error: stack.split('\n')[0] }) : {};
      logger()[shown]({ context, ...error }, text);
    };
  return {
    log: write('info'),
    error: write('error'),
    warn: write('warn'),
    debug: write('debug'),
    verbose: write('trace'),
    fatal: write('fatal'),
  };
}

/**
 * A process's logging: one pino logger (JSON, or pretty on a terminal) and AppLogger. nestjs-pino provides
 * PinoLogger and the request contexts, but no HTTP middleware: an HTTP app binds its requests with
 * `logRequests` (Fastify hooks) instead.
 */
@Module({})
export class LoggingModule {
  static forRoot(settings: LogSettings, service: string): DynamicModule {
    return {
      module: LoggingModule,
      imports: [
        LoggerModule.forRoot({
          // nestjs-pino makes its root logger through pino-http, as a child of this one; left to wrap them,
          // pino-http would give that child its own serializers, and an error would be logged whole (a pg
          // error with its client, connection settings and all) instead of through errorFields.
          pinoHttp: { logger: pino(loggerOptions(settings, service)), wrapSerializers: false },
          forRoutes: [],
        }),
      ],
      providers: [AppLogger],
      exports: [AppLogger],
    };
  }
}

import { LoggerService } from '@nestjs/common';
import pino, { Logger, LoggerOptions } from 'pino';

import type { Env } from '@app/config';

/** Credentials never reach a log line, whatever object carries them. */
export const REDACTED_PATHS = [
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

export function loggerOptions(settings: LogSettings, service: string): LoggerOptions {
  return {
    level: settings.LOG_LEVEL,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(isPretty(settings.LOG_FORMAT)
      ? {
          transport: {
            target: 'pino-pretty',
            options: {
              colorize: process.stdout.isTTY === true,
              translateTime: 'SYS:HH:MM:ss.l',
              ignore: 'pid,hostname,context',
              messageFormat: '{service} {msg}',
              singleLine: true,
            },
          },
        }
      : {}),
  };
}

const loggers = new Map<string, Logger>();

/** One logger per service and process: every part of a process writes to the same stream (and, pretty, the same transport). */
export function createLogger(settings: LogSettings, service: string): Logger {
  const key = `${service}:${settings.LOG_LEVEL}:${settings.LOG_FORMAT}`;
  let logger = loggers.get(key);
  if (!logger) {
    logger = pino(loggerOptions(settings, service));
    loggers.set(key, logger);
  }
  return logger;
}

/** Nest's own start-up chatter (modules loaded, routes mapped): useful when debugging, noise at info. */
const BOOT_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/**
 * Routes Nest's logging into the same structured stream. Nest's Logger passes `(message, ...params, context)`;
 * a message that is an object is logged as fields, with the next parameter as the text:
 * `logger.warn({ err, schedule_id }, 'Schedule claim failed')`, so errors keep their type, message and stack.
 */
export class PinoLoggerService implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    const context = contextOf(params);
    this.write(context !== undefined && BOOT_CONTEXTS.has(context) ? 'debug' : 'info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  private write(level: 'error' | 'warn' | 'info' | 'debug' | 'trace', message: unknown, params: unknown[]): void {
    const context = contextOf(params);
    if (typeof message === 'object' && message !== null && !(message instanceof Error)) {
      this.logger[level]({ ...message, context }, typeof params[0] === 'string' && params.length > 1 ? params[0] : '');
      return;
    }
    // Nest's own error lines carry a stack as the parameter before the context.
    const trace = level === 'error' && params.length > 1 && typeof params[0] === 'string' ? params[0] : undefined;
    this.logger[level](
      { context, ...(trace ? { trace } : {}), ...(message instanceof Error ? { err: message } : {}) },
      message instanceof Error ? message.message : String(message),
    );
  }
}

/** Nest puts the logger's context last. */
function contextOf(params: unknown[]): string | undefined {
  const last = params[params.length - 1];
  return typeof last === 'string' ? last : undefined;
}

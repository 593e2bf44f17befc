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
            options: { colorize: process.stdout.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,context', messageFormat: '{service} {msg}', singleLine: true },
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

/** Routes Nest's own logging into the same structured stream. */
export class PinoLoggerService implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string): void {
    if (context !== undefined && BOOT_CONTEXTS.has(context)) {
      this.logger.debug({ context }, String(message));
    } else {
      this.logger.info({ context }, String(message));
    }
  }

  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }

  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }

  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }

  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
}

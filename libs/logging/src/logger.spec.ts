import { Writable } from 'node:stream';

import { Logger } from '@nestjs/common';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';

import { PinoLoggerService } from './logger';

function capture(): { service: PinoLoggerService; lines: () => Record<string, any>[] } {
  const chunks: string[] = [];
  const stream = new Writable({ write: (chunk, _encoding, done) => (chunks.push(String(chunk)), done()) });
  return {
    service: new PinoLoggerService(pino({ level: 'debug' }, stream)),
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
  };
}

describe('PinoLoggerService (Nest logging into pino)', () => {
  afterEach(() => Logger.overrideLogger(false));

  it('logs an { err } object as fields, with its text and the logger’s context', () => {
    const { service, lines } = capture();
    Logger.overrideLogger(service);
    new Logger('ScheduleTicker').warn({ err: new TypeError('boom'), schedule_id: 's1' }, 'Schedule claim failed');
    const [line] = lines();
    expect(line).toMatchObject({
      level: 40,
      msg: 'Schedule claim failed',
      context: 'ScheduleTicker',
      schedule_id: 's1',
      err: { type: 'TypeError', message: 'boom' },
    });
    expect(line.err.stack).toContain('TypeError: boom');
  });

  it('keeps plain messages, and Nest’s start-up lines go to debug', () => {
    const { service, lines } = capture();
    service.log('Mapped {/health, GET} route', 'RouterExplorer');
    service.log('worker ready', 'Main');
    service.error('Something broke', 'Error: x\n    at y', 'ExceptionHandler');
    expect(lines().map(({ level, msg, context, trace }) => ({ level, msg, context, trace }))).toEqual([
      { level: 20, msg: 'Mapped {/health, GET} route', context: 'RouterExplorer', trace: undefined },
      { level: 30, msg: 'worker ready', context: 'Main', trace: undefined },
      { level: 50, msg: 'Something broke', context: 'ExceptionHandler', trace: 'Error: x\n    at y' },
    ]);
  });
});

import { BadRequestException, Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AuthErrorCode, AuthException } from '@app/auth';
import { DomainException, RequestErrorCode, RequestException } from '@app/errors';
import { QueueErrorCode, QueueException } from '@app/queue';
import { RunErrorCode, RunException } from '@app/runs';
import { ScheduleErrorCode, ScheduleException } from '@app/schedules';
import { ServiceAccountErrorCode, ServiceAccountException } from '@app/service-accounts';
import { IntField, StringField } from '@app/validation';

import { AppOnDatabase, bootHttpModule } from '../../../../test/support/nest-module';
import { HttpExceptionFilter } from './http-exception.filter';
import { RequestValidationPipe } from './validation.pipe';

/** The spec's status of every domain error code (its Errors section and the operator decisions). */
const SPEC_STATUS: [new (code: never, detail: string) => DomainException, Record<string, string>, Record<string, number>][] = [
  [RequestException, RequestErrorCode, { BadRequest: 400, NotFound: 404, Forbidden: 403, DatabaseUnavailable: 503 }],
  [AuthException, AuthErrorCode, { Unauthenticated: 401, Forbidden: 403, Throttled: 429, Unavailable: 503 }],
  [
    ServiceAccountException,
    ServiceAccountErrorCode,
    {
      NotFound: 404,
      NameTaken: 409,
      InvalidScopes: 400,
      PrivilegedNotAllowed: 400,
      CannotGrant: 403,
      NotOwner: 403,
      NotActive: 409,
      MinterInactive: 401,
    },
  ],
  [
    RunException,
    RunErrorCode,
    {
      ComponentNotFound: 404,
      RunNotFound: 404,
      SessionNotFound: 404,
      SessionBusy: 409,
      IdempotencyKeyReused: 409,
      InvalidRequest: 400,
      QueueDisabled: 503,
    },
  ],
  [QueueException, QueueErrorCode, { Disabled: 503, JobNotFound: 404, NotRequeueable: 400, MayStillBeRunning: 409 }],
  [
    ScheduleException,
    ScheduleErrorCode,
    { NotFound: 404, RunNotFound: 404, NameTaken: 409, Disabled: 409, Forbidden: 403, OwnerCannotAct: 409 },
  ],
];

const EXCEPTIONS = new Map(SPEC_STATUS.flatMap(([type, codes]) => Object.values(codes).map((code) => [code, type] as const)));

class ProbeDto {
  @StringField({ maxLength: 8 }) name!: string;
  @IntField({ min: 1, max: 10 }) count!: number;
}

/** Routes that fail each way a real route can. */
@Controller('probe')
class ProbeController {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  @Get('domain/:code')
  domain(@Param('code') code: string): never {
    const type = EXCEPTIONS.get(code)!;
    throw new type(code as never, `detail of ${code}`);
  }

  @Post('validated')
  @HttpCode(200)
  validated(@Body() body: ProbeDto): ProbeDto {
    return body;
  }

  @Get('http')
  http(): never {
    throw new BadRequestException('Plain Nest exception');
  }

  @Get('unknown')
  unknown(): never {
    throw new TypeError('secret internals at /srv/app.js:12');
  }

  /** A query on a connection the server has just closed: what an outage looks like to a route. */
  @Get('outage')
  async outage(): Promise<void> {
    await this.db.transaction(async (manager) => {
      await manager.query('SELECT pg_terminate_backend(pg_backend_pid())').catch(() => undefined);
      await manager.query('SELECT 1');
    });
  }
}

// The spec's error bodies, rendered by the one filter for every kind of error a route can raise.
describe('error rendering', () => {
  let app: AppOnDatabase;

  beforeAll(async () => {
    app = await bootHttpModule({
      controllers: [ProbeController],
      providers: [
        { provide: APP_FILTER, useClass: HttpExceptionFilter },
        { provide: APP_PIPE, useClass: RequestValidationPipe },
      ],
    });
  });

  afterAll(async () => {
    await app?.close();
  });

  const request = (method: 'GET' | 'POST', url: string, payload?: string, contentType = 'application/json') =>
    app.http.inject({ method, url, payload, headers: payload === undefined ? {} : { 'content-type': contentType } });

  it.each(SPEC_STATUS.flatMap(([, codes, statuses]) => Object.entries(codes).map(([name, code]) => [code, statuses[name]] as const)))(
    '%s answers %i with {detail} only',
    async (code, status) => {
      const response = await request('GET', `/probe/domain/${code}`);
      expect(response.statusCode).toBe(status);
      expect(response.json()).toEqual({ detail: `detail of ${code}` });
    },
  );

  it('the table names every code of every domain (a new code needs its spec status here)', () => {
    for (const [, codes, statuses] of SPEC_STATUS) {
      expect(Object.keys(statuses).sort()).toEqual(Object.keys(codes).sort());
    }
  });

  it('a 401 carries the Bearer challenge', async () => {
    const response = await request('GET', `/probe/domain/${AuthErrorCode.Unauthenticated}`);
    expect(response.headers['www-authenticate']).toBe('Bearer');
  });

  it('a body that fails validation answers 422 with one {loc, msg, type, input, ctx} per problem', async () => {
    const response = await request('POST', '/probe/validated', JSON.stringify({ name: 'far too long', count: 0 }));
    expect(response.statusCode).toBe(422);
    const { detail } = response.json<{ detail: Record<string, unknown>[] }>();
    expect(detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ loc: ['body', 'name'], input: 'far too long', ctx: expect.any(Object), msg: expect.any(String) }),
        expect.objectContaining({ loc: ['body', 'count'], type: 'min', input: 0 }),
      ]),
    );
    for (const issue of detail) {
      expect(Object.keys(issue).sort()).toEqual(['ctx', 'input', 'loc', 'msg', 'type']);
    }
  });

  it('a missing field is "Field required" of type missing', async () => {
    const response = await request('POST', '/probe/validated', JSON.stringify({ count: 2 }));
    expect(response.statusCode).toBe(422);
    expect(response.json()).toEqual({ detail: [{ loc: ['body', 'name'], msg: 'Field required', type: 'missing', input: null, ctx: {} }] });
  });

  it("Nest's own HTTP exceptions keep their status with the standard body; an unknown route names itself", async () => {
    const http = await request('GET', '/probe/http');
    expect(http.statusCode).toBe(400);
    expect(http.json()).toEqual({ detail: 'Plain Nest exception' });

    const missing = await request('GET', '/nowhere?x=1');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ detail: 'No route for GET /nowhere' });
  });

  it('an unknown error is a 500 with an error_id and nothing of the failure itself', async () => {
    const response = await request('GET', '/probe/unknown');
    expect(response.statusCode).toBe(500);
    const body = response.json<Record<string, string>>();
    expect(body).toEqual({
      detail: 'Internal server error',
      error_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      error_type: 'internal_error',
    });
    expect(response.body).not.toContain('secret internals');
  });

  it('a database that went away is a 503, not a 500', async () => {
    const response = await request('GET', '/probe/outage');
    expect(response.json()).toEqual({ detail: 'Database unavailable; try again shortly' });
    expect(response.statusCode).toBe(503);
  });
});

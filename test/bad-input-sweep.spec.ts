/**
 * The bad-input sweep: for every operation the served /openapi.json declares, property-based bad
 * requests (fast-check) against the real api (security-key auth, MCP on, demo components): bodies and
 * query values of the wrong type, out-of-range numbers, huge and odd strings (NUL, control characters,
 * lone surrogates and invalid UTF-8), malformed JSON, wrong content types, garbage path ids; mostly with
 * the admin credential, some anonymous or with a bad token. Every answer must be below 500, and every
 * 4xx must carry the spec's error body: `{detail, error_id?, error_type?}`, or for 422 the
 * `{detail: [{loc, msg, type, input, ctx}]}` list. /mcp answers JSON-RPC, whose errors are JSON-RPC
 * objects; there only "no 5xx" and "JSON" are asserted. A2A's HTTP+JSON routes answer the A2A error object.
 *
 * Deterministic: the seed is FAST_CHECK_SEED or a constant, and each operation gets SWEEP_RUNS cases
 * (default 30), so CI replays the same requests. A failure prints the seed and the request to replay.
 */
import { randomUUID } from 'node:crypto';

import { ValidateFunction } from 'ajv/dist/2020';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from './support/database';
import { call } from './support/http';
import { schemaCompiler, undocumented } from './support/openapi-schemas';
import { mintAccount, ROOT_KEY } from './support/principals';
import { RunningApi, startApi } from './support/processes';

const SEED = Number(process.env.FAST_CHECK_SEED ?? 20_261_123);
const RUNS = Number(process.env.SWEEP_RUNS ?? 30);
const CONCURRENCY = 4;
const MCP_PATH = '/mcp';

interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  queryParams: { name: string; schema: Schema }[];
  bodySchema: Schema | null;
  bodyTypes: string[];
}

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  $ref?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  allOf?: Schema[];
}

interface BadRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  what: string;
}

// ---------------------------------------------------------------- odd values

const NUL = '\u0000';
const controlChar = fc.integer({ min: 0, max: 0x1f }).map((code) => String.fromCharCode(code));
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
/** Odd text; `long` is the longest of the over-long strings (bodies take 70,000; a URL is kept under Node's header limit). */
const oddText = (long: number) =>
  fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      NUL,
      `a${NUL}b`,
      '\u007f',
      '\u0085',
      '\u2028',
      '\ufeff',
      '\ud800',
      'x\udfffy',
      '%00',
      '%',
      '%zz',
      '..',
      '../..',
      '%2e%2e%2f',
      "' OR '1'='1",
      '<script>',
      '{{7*7}}',
      '${x}',
      '\\',
      '"',
      'null',
      'true',
      '-1',
      '1e309',
      'NaN',
    ),
    fc.tuple(fc.string({ maxLength: 8 }), controlChar, fc.string({ maxLength: 8 })).map(([a, c, b]) => a + c + b),
    fc.tuple(fc.string({ maxLength: 8 }), loneSurrogate).map(([a, s]) => a + s),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.integer({ min: 256, max: long }).map((length) => 'x'.repeat(length)),
    fc.constantFrom('é'.repeat(300), '🚀'.repeat(200)),
  );
const oddString = oddText(70_000);
const oddUrlText = oddText(2_000);
const oddNumber = fc.oneof(
  fc.constantFrom(-1, 0, 0.5, -0.5, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 2 ** 31, -(2 ** 31) - 1, Number.MAX_SAFE_INTEGER, 1e-300),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const anyJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    oddString,
    oddNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(oddString, tie('value'), { maxKeys: 3 }),
  ),
})).value;

/** A value for a property declared with `schema`: mostly of the wrong type or out of its range. */
function badValueFor(schema: Schema): fc.Arbitrary<unknown> {
  const types = [schema.type ?? []].flat();
  const outOfRange: fc.Arbitrary<unknown>[] = [];
  if (schema.minimum !== undefined) outOfRange.push(fc.constantFrom(schema.minimum - 1, schema.minimum - 0.5));
  if (schema.maximum !== undefined) outOfRange.push(fc.constantFrom(schema.maximum + 1, schema.maximum + 0.5, schema.maximum * 1000));
  if (schema.maxLength !== undefined) outOfRange.push(fc.constant('y'.repeat(schema.maxLength + 1)));
  if (schema.enum)
    outOfRange.push(fc.constantFrom(...schema.enum.map((value) => `${String(value)}x`), String(schema.enum[0]).toUpperCase()));
  return fc.oneof(
    anyJson,
    oddString,
    oddNumber,
    fc.constantFrom(null, true, false, [], {}, [NUL], { [NUL]: NUL }),
    ...(types.includes('array') ? [fc.array(anyJson, { maxLength: 4 }), fc.constant(Array.from({ length: 2000 }, () => 'z'))] : []),
    ...outOfRange,
  );
}

// ---------------------------------------------------------------- URL text

/** Percent-encodes for a URL; a lone surrogate, which encodeURIComponent refuses, becomes invalid UTF-8 escapes. */
function encodeOdd(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.charCodeAt(0);
    out +=
      code >= 0xd800 && code <= 0xdfff
        ? `%ED%${(0xa0 + ((code >> 6) & 0x1f)).toString(16).toUpperCase()}%${(0x80 + (code & 0x3f)).toString(16).toUpperCase()}`
        : encodeURIComponent(char);
  }
  return out;
}

const rawPathSegment = fc.constantFrom(
  '%00',
  '%',
  '%zz',
  '%C0%AF',
  '%ED%A0%80',
  '%FF',
  '..',
  '%2e%2e',
  '%2F',
  'a%2Fb',
  ';',
  '%20',
  '~',
  "1'%20OR%20'1'='1",
);
const garbageId = fc.oneof(
  oddUrlText.filter((value) => value !== '').map(encodeOdd),
  rawPathSegment,
  fc.uuid().map((uuid) => uuid.toUpperCase()),
  fc.uuid().map((uuid) => `${uuid}x`),
  fc.uuid().map((uuid) => `${uuid}%00`),
  fc.constantFrom('00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '0', '-1', '9'.repeat(40)),
);

// ---------------------------------------------------------------- documents and cases

function resolveSchema(document: any, schema: Schema | undefined): Schema | null {
  if (!schema) return null;
  if (schema.$ref) return resolveSchema(document, document.components.schemas[schema.$ref.split('/').pop()!]);
  if (schema.allOf) {
    const parts = schema.allOf.map((part) => resolveSchema(document, part) ?? {});
    return { type: 'object', properties: Object.assign({}, ...parts.map((part) => part.properties ?? {})) };
  }
  return schema;
}

function operationsOf(document: any): Operation[] {
  return Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => {
      const parameters: { in: string; name: string; schema?: Schema }[] = operation.parameters ?? [];
      const content = operation.requestBody?.content ?? {};
      return {
        method: method.toUpperCase(),
        path,
        pathParams: [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]),
        queryParams: parameters
          .filter((parameter) => parameter.in === 'query')
          .map((parameter) => ({ name: parameter.name, schema: resolveSchema(document, parameter.schema) ?? {} })),
        bodySchema: resolveSchema(document, content['application/json']?.schema),
        bodyTypes: Object.keys(content),
      };
    }),
  );
}

interface Fixtures {
  /** A value that names something real, per path parameter: cases mix them in so validation past the path is reached. */
  real: Record<string, string>;
}

function casesFor(operation: Operation, fixtures: Fixtures): fc.Arbitrary<BadRequest> {
  const pathValue = (name: string) =>
    fixtures.real[name]
      ? fc.oneof({ weight: 2, arbitrary: garbageId }, { weight: 1, arbitrary: fc.constant(fixtures.real[name]) })
      : garbageId;
  const path = fc
    .tuple(...operation.pathParams.map(pathValue))
    .map((values) => operation.pathParams.reduce((text, name, index) => text.replace(`{${name}}`, values[index]), operation.path));

  const queryValue = (schema: Schema): fc.Arbitrary<string> =>
    fc.oneof(
      oddUrlText,
      badValueFor(schema).map((value) =>
        typeof value === 'string' ? value.slice(0, 2_000) : (JSON.stringify(value) ?? '').slice(0, 2_000),
      ),
    );
  const knownQuery = operation.queryParams.length
    ? fc
        .subarray(operation.queryParams)
        .chain((chosen) =>
          fc.tuple(...chosen.map((parameter) => queryValue(parameter.schema).map((value) => [parameter.name, value] as const))),
        )
    : fc.constant([] as (readonly [string, string])[]);
  const query = fc
    .tuple(
      knownQuery,
      fc.array(fc.tuple(oddUrlText, oddUrlText), { maxLength: 2 }),
      fc.boolean(),
      fc.constantFrom('', '&&', '&=&', '&a', '&%', '&limit=1&limit=2'),
    )
    .map(([known, extra, repeat, tail]) => {
      const pairs = [...known, ...(repeat ? known : []), ...extra];
      const text = pairs.map(([key, value]) => `${encodeOdd(key)}=${encodeOdd(value)}`).join('&') + tail;
      return text ? `?${text}` : '';
    });

  const properties = Object.entries(operation.bodySchema?.properties ?? {});
  const objectBody = (
    properties.length
      ? fc
          .subarray(properties, { minLength: 1 })
          .chain((chosen) => fc.tuple(...chosen.map(([name, schema]) => badValueFor(schema).map((value) => [name, value] as const))))
      : fc.constant([] as (readonly [string, unknown])[])
  ).chain((entries) => fc.dictionary(oddString, anyJson, { maxKeys: 2 }).map((extra) => ({ ...extra, ...Object.fromEntries(entries) })));
  const json = (body: fc.Arbitrary<unknown>, what: string) =>
    body.map((value) => ({ body: JSON.stringify(value) ?? 'null', contentType: 'application/json', what }));
  const rawJson = fc
    .constantFrom(
      '{"message": ',
      '{',
      '[',
      '{"a":1,}',
      "{'a': 1}",
      '{"a": "\\x"}',
      '{"a": "\\ud800"}',
      '{"name": "\\udc00x", "message": "\\ud83d"}',
      '{"message": "a\\u0000b", "name": "\\u0000"}',
      '\ufeff{}',
      '{"__proto__": {"admin": true}}',
      '{"constructor": {"prototype": {"x": 1}}}',
      'null',
      '"text"',
      '42',
      '1e999',
      '{"a": 1e999}',
      `${'['.repeat(5000)}${']'.repeat(5000)}`,
      `{"payload": ${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`,
      `{"description": "${'d'.repeat(200_000)}"}`,
    )
    .map((body) => ({ body, contentType: 'application/json', what: 'malformed or odd JSON text' }));
  const invalidUtf8 = fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => ({
    body: new Uint8Array([
      ...Buffer.from('{"message": "'),
      0xff,
      0xfe,
      0xc0,
      0xaf,
      0xed,
      0xa0,
      0x80,
      ...bytes.filter((byte) => byte !== 0x22 && byte !== 0x5c),
      ...Buffer.from('"}'),
    ]),
    contentType: 'application/json',
    what: 'invalid UTF-8 in JSON',
  }));
  const wrongType = fc
    .tuple(
      fc.constantFrom(
        'text/plain',
        'application/xml',
        'multipart/form-data; boundary=x',
        'application/octet-stream',
        'application/json; charset=utf-16',
        'application/x-www-form-urlencoded',
        'image/png',
        'application/jsonx',
        '',
      ),
      fc.oneof(oddString, fc.constant('message=a%00b&background=maybe&stream=1&stream=2')),
    )
    .map(([contentType, body]) => ({ body, contentType, what: 'wrong or odd content type' }));
  const body = fc.oneof(
    { weight: 4, arbitrary: json(objectBody, 'bad field values') },
    { weight: 1, arbitrary: json(anyJson, 'any JSON value') },
    { weight: 2, arbitrary: rawJson },
    { weight: 1, arbitrary: invalidUtf8 },
    { weight: 2, arbitrary: wrongType },
    { weight: 1, arbitrary: fc.constant(null) },
  );

  const auth = fc.oneof(
    { weight: 8, arbitrary: fc.constant<Record<string, string>>({ authorization: `Bearer ${ROOT_KEY}` }) },
    { weight: 1, arbitrary: fc.constant<Record<string, string>>({}) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Record<string, string>>(
        { authorization: 'Bearer svc_pat_x' },
        { authorization: 'Basic Zm9vOmJhcg==' },
        { authorization: 'Bearer' },
        { authorization: `Bearer ${'a'.repeat(5000)}` },
      ),
    },
  );
  const extraHeaders = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Record<string, string>>({}) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Record<string, string>>(
        { 'idempotency-key': 'k'.repeat(600) },
        { 'idempotency-key': 'é\u00ff' },
        { 'idempotency-key': ' ' },
        { 'x-request-id': '../../etc' },
        { accept: 'text/event-stream' },
        { 'content-length': '0' },
      ),
    },
  );
  const withBody = operation.bodySchema !== null || operation.bodyTypes.length > 0 || operation.method !== 'GET';

  return fc
    .record({ path, query, body: withBody ? body : fc.constant(null), auth, extraHeaders })
    .map(({ path: url, query: search, body: payload, auth: credential, extraHeaders: more }) => ({
      method: operation.method,
      path: `${url}${search}`,
      headers: { ...credential, ...more, ...(payload && payload.contentType ? { 'content-type': payload.contentType } : {}) },
      body: payload?.body,
      what: payload?.what ?? 'no body',
    }));
}

// ---------------------------------------------------------------- the run

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

async function send(baseUrl: string, request: BadRequest): Promise<Answer> {
  const headers = { ...request.headers };
  if ('content-length' in headers && request.body !== undefined) delete headers['content-length'];
  const response = await fetch(`${baseUrl}${request.path}`, {
    method: request.method,
    headers,
    body: request.body,
    redirect: 'manual',
    signal: AbortSignal.timeout(20_000),
  });
  const contentType = response.headers.get('content-type') ?? '';
  // An event stream that started (200) is not read to its end: its status is the answer.
  const text = contentType.includes('event-stream') ? (await response.body?.cancel(), '') : await response.text();
  return { status: response.status, contentType, text };
}

/** The error bodies as the served document describes them (what /docs promises clients), compiled. */
interface DocumentedBodies {
  error: ValidateFunction;
  validation: ValidateFunction;
}

function documentedBodies(document: any): DocumentedBodies {
  const compile = schemaCompiler(document);
  return {
    error: compile({ $ref: '#/components/schemas/ErrorBodyDto' }),
    validation: compile({ $ref: '#/components/schemas/ValidationErrorBodyDto' }),
  };
}

/** What is wrong with an answer, or null: the spec's bodies on every 4xx, as documented, never a 5xx. */
export function problemWith(answer: Answer, path: string, documented: DocumentedBodies): string | null {
  if (answer.status >= 500) return `status ${answer.status}`;
  if (answer.status < 400) return null;
  // application/json, or a JSON media type of its own (A2A's application/a2a+json).
  if (!/application\/([\w.-]+\+)?json/.test(answer.contentType)) return `a ${answer.status} that is not JSON (${answer.contentType})`;
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `a ${answer.status} whose body does not parse`;
  }
  if (path.split('?')[0] === MCP_PATH && body?.jsonrpc === '2.0') return null;
  // A2A's HTTP+JSON binding answers its protocol's error object (what A2A clients parse); auth and unknown components keep ours.
  if (path.startsWith('/a2a/') && typeof body?.error?.message === 'string' && Object.keys(body).join() === 'error') return null;
  if (answer.status === 422) {
    const issues = body?.detail;
    if (Object.keys(body ?? {}).join() !== 'detail' || !Array.isArray(issues) || issues.length === 0)
      return '422 without the {detail: [...]} body';
    for (const issue of issues) {
      if (
        Object.keys(issue).sort().join() !== 'ctx,input,loc,msg,type' ||
        !Array.isArray(issue.loc) ||
        typeof issue.msg !== 'string' ||
        typeof issue.type !== 'string' ||
        typeof issue.ctx !== 'object'
      ) {
        return `422 issue without {loc, msg, type, input, ctx}: ${JSON.stringify(issue).slice(0, 200)}`;
      }
    }
    return undocumented(documented.validation, body);
  }
  if (typeof body?.detail !== 'string' || !Object.keys(body).every((key) => ['detail', 'error_id', 'error_type'].includes(key))) {
    return `a ${answer.status} without the {detail, error_id?, error_type?} body`;
  }
  if (/\bat .+\.(js|ts):\d+/.test(answer.text)) return 'a stack trace in the body';
  return undocumented(documented.error, body);
}

async function inBatches<T>(items: T[], size: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: size }, async () => {
      while (next < items.length) await each(items[next++]);
    }),
  );
}

describe('bad-input sweep over every operation of /openapi.json', () => {
  let api: RunningApi;
  let operations: Operation[];
  let documented: DocumentedBodies;
  let fixtures: Fixtures;

  beforeAll(async () => {
    api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      MCP_ENABLED: 'true',
      DEMO_COMPONENTS: 'true',
    });
    const document = (await call(api.url, 'GET', '/openapi.json')).body;
    operations = operationsOf(document);
    documented = documentedBodies(document);
    const account = await mintAccount(api.url, ROOT_KEY);
    const schedule = await call(api.url, 'POST', '/schedules', {
      token: ROOT_KEY,
      json: { name: 'sweep', cron_expr: '0 0 1 1 *', endpoint: '/health', method: 'GET' },
    });
    const run = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'hi' } });
    fixtures = {
      real: {
        id: account.id,
        schedule_id: schedule.body.id,
        run_id: run.body.run_id ?? randomUUID(),
        job_id: run.body.run_id ?? randomUUID(),
        session_id: run.body.session_id ?? 'session',
        agent_id: 'echo-agent',
        team_id: 'echo-team',
        workflow_id: 'echo-workflow',
      },
    };
  });
  afterAll(() => api?.stop());

  it('answers every generated bad request below 500, and every 4xx with the spec error body', { timeout: 180_000 }, async () => {
    expect(operations.length).toBeGreaterThan(20);
    const requests = operations.flatMap((operation, index) =>
      fc.sample(casesFor(operation, fixtures), { seed: SEED + index, numRuns: RUNS }),
    );
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const started = performance.now();
    await inBatches(requests, CONCURRENCY, async (request) => {
      let problem: string | null;
      let status = 0;
      try {
        const answer = await send(api.url, request);
        status = answer.status;
        problem = problemWith(answer, request.path, documented);
        if (problem) problem += `: ${answer.text.slice(0, 200)}`;
      } catch (error) {
        problem = `no answer (${(error as Error).message})`;
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (problem) {
        failures.push(
          `${request.method} ${request.path.slice(0, 200)} [${request.what}; ${request.headers['content-type'] ?? 'no content type'}; ${request.headers.authorization ? 'bearer' : 'anonymous'}; body ${String(typeof request.body === 'string' ? request.body.slice(0, 120) : request.body ? `${request.body.length} bytes` : 'none')}] -> ${problem}`,
        );
      }
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const summary = [...statuses.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status}:${count}`)
      .join(' ');
    console.log(
      `bad-input sweep: ${requests.length} requests over ${operations.length} operations in ${seconds} s (seed ${SEED}, ${RUNS} per operation); statuses ${summary}`,
    );
    expect(failures, `seed ${SEED}; replay with FAST_CHECK_SEED=${SEED}\n${failures.slice(0, 30).join('\n')}`).toEqual([]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { RunningApi, startApi } from '../../../test/support/processes';

const PUBLIC_OPERATIONS = [
  'GET /health',
  'GET /info',
  'GET /readyz',
  'GET /.well-known/oauth-protected-resource',
  'GET /.well-known/oauth-protected-resource/mcp',
];
// /mcp authenticates its caller, then checks each tool call against the scope of the REST route the tool mirrors.
const PER_TOOL_SCOPE = 'POST /mcp';
// One A2A JSON-RPC endpoint serves several methods: its scope depends on the method, and the document names each.
const PER_METHOD_SCOPE = /^POST \/a2a\/(agents|teams|workflows)\/\{[a-z_]+\}$/;
/** HTTP+JSON's custom task methods: `:cancel` changes the task, `:subscribe` follows it. */
const PER_TASK_METHOD_SCOPE = /^POST \/a2a\/(agents|teams)\/\{[a-z_]+\}\/tasks\/\{task_id\}$/;
// /ws checks each action against the scope of its REST route; a refused credential is a frame, not an HTTP status.
const PER_ACTION_SCOPE = 'GET /ws';

describe('OpenAPI document and Swagger UI', () => {
  let api: RunningApi;
  let document: any;
  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: 'x'.repeat(24), MCP_ENABLED: 'true' });
    document = (await call(api.url, 'GET', '/openapi.json')).body;
  });
  afterAll(() => api?.stop());

  it('declares OpenAPI 3.1.0, interface version 3.0.4 and a bearer scheme', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('3.0.4');
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    // One server, this page's own address: the page's policy (connect-src 'self') would refuse "Try it out" any other.
    expect(document.servers.map((server: { url: string }) => server.url)).toEqual(['/']);
  });

  it('states the scope of every operation that is not public, with the error bodies', () => {
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods as Record<string, any>).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, operation })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(6);
    expect(operations.map(({ key }) => key)).toContain(PER_TOOL_SCOPE);
    for (const { key, operation } of operations) {
      if (PUBLIC_OPERATIONS.includes(key)) {
        expect(operation['x-required-scope'], key).toBeUndefined();
        continue;
      }
      if (key === PER_ACTION_SCOPE) {
        expect(operation['x-required-scope'], key).toContain('per action');
        // The credential is judged after the upgrade, in frames: no 401, 403 about scopes, 429 or 503.
        expect(Object.keys(operation.responses).sort(), key).toEqual(['101', '400', '403', '426', '500']);
        continue;
      }
      if (key === PER_TOOL_SCOPE) {
        expect(operation['x-required-scope'], key).toContain('per tool');
        expect(Object.keys(operation.responses).sort(), key).toEqual([
          '200',
          '202',
          '400',
          '401',
          '403',
          '406',
          '413',
          '415',
          '429',
          '500',
          '503',
        ]);
      } else if (PER_TASK_METHOD_SCOPE.test(key)) {
        expect(operation['x-required-scope'], key).toMatch(/^[a-z]+:run \(:cancel\) or [a-z]+:read \(:subscribe\)$/);
      } else if (PER_METHOD_SCOPE.test(key)) {
        expect(operation['x-required-scope'], key).toMatch(
          /^[a-z]+:run \(SendMessage, SendStreamingMessage(, CancelTask, any other method)?\)( or [a-z]+:read \(GetTask and the other reads\))?$/,
        );
      } else {
        expect(operation['x-required-scope'], key).toMatch(/^([a-z_]+:)+[a-z_]+$/);
      }
      expect(operation.security, key).toContainEqual({ bearer: [] });
      // What a credential can meet anywhere: missing or refused, too many failed lookups, the database down;
      // and what any route can answer: an unexpected failure, with its error_id.
      for (const status of ['401', '403', '429', '500', '503']) {
        expect(operation.responses[status], `${key} ${status}`).toBeDefined();
      }
      // 422 where there is something to validate (a body or a query); a malformed path id is a 404.
      const validates =
        operation.requestBody !== undefined || (operation.parameters ?? []).some((parameter: any) => parameter.in === 'query');
      expect(operation.responses['422'] !== undefined, `${key} 422`).toBe(validates && !key.includes('/a2a/') && key !== PER_TOOL_SCOPE);
    }
    expect(document.components.schemas.ErrorBodyDto.required).toEqual(['detail']);
    expect(document.components.schemas.ValidationErrorBodyDto).toBeDefined();
  });

  it('declares queue and schedule operations "anonymous or bearer": security [{}, {bearer: []}]', () => {
    const operations = Object.entries(document.paths)
      .filter(([path]) => path.startsWith('/queue') || path.startsWith('/schedules'))
      .flatMap(([path, methods]) =>
        Object.entries(methods as Record<string, any>).map(([method, operation]) => ({
          key: `${method.toUpperCase()} ${path}`,
          operation,
        })),
      );
    expect(operations.length).toBeGreaterThanOrEqual(14);
    for (const { key, operation } of operations) {
      expect(operation.security, key).toEqual([{}, { bearer: [] }]);
    }
    expect(document.paths['/service-accounts'].post.security).toEqual([{ bearer: [] }]);
  });

  it("documents a body's 413 and a POST's, PUT's or PATCH's 415, /metrics errors as JSON, every time as Unix seconds, and operation ids a deep link takes", () => {
    for (const [path, methods] of Object.entries<any>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(methods)) {
        const key = `${method.toUpperCase()} ${path}`;
        // No underscore or whitespace: Swagger UI reads an underscore in a deep link as escaped whitespace.
        expect(operation.operationId, key).toMatch(/^[A-Za-z0-9[\]]+$/);
        // A form is refused wherever a route takes none, a route taking no body at all included.
        if (['post', 'put', 'patch'].includes(method)) {
          expect(operation.responses['415']?.content?.['application/json']?.example, key).toEqual({
            detail: 'Unsupported Content-Type: send application/json',
          });
        }
        if (operation.requestBody) {
          expect(operation.responses['413']?.content?.['application/json']?.example, key).toEqual({ detail: 'Request body is too large' });
        }
      }
    }
    const metrics = document.paths['/metrics'].get.responses;
    expect(Object.keys(metrics['200'].content)).toEqual(['text/plain']);
    for (const status of ['401', '403']) {
      expect(Object.keys(metrics[status].content), status).toEqual(['application/json']);
    }
    const times = Object.entries<any>(document.components.schemas).flatMap(([name, schema]) =>
      Object.entries<any>(schema.properties ?? {})
        .filter(([property]) => property.endsWith('_at'))
        .map(([property, value]) => [`${name}.${property}`, value.description] as const),
    );
    expect(times.length).toBeGreaterThan(30);
    for (const [property, description] of times) {
      expect(description, property).toMatch(/seconds/i);
    }
  });

  it('documents the service-account request and response schemas', () => {
    const create = document.components.schemas.CreateServiceAccountDto;
    expect(create.required).toEqual(['name']);
    expect(create.properties.expires_in_days).toMatchObject({ type: ['integer', 'null'], minimum: 1, maximum: 3650 });
    expect(document.components.schemas.CreatedServiceAccountDto.properties.token).toBeDefined();
    expect(document.components.schemas.ServiceAccountDto.properties.token).toBeUndefined();
    expect(document.components.schemas.ServiceAccountDto.properties.last_used_ip).toMatchObject({ type: ['string', 'null'] });
    const rotate = document.paths['/service-accounts/{id}/rotate'].post;
    expect(rotate['x-required-scope']).toBe('service_accounts:write');
    expect(rotate.summary).toContain('Rotate');
    expect(Object.keys(rotate.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '404', '409', '422']));
    expect(rotate.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/CreatedServiceAccountDto');
    expect(document.components.schemas.RotateServiceAccountDto.properties.grace_seconds).toMatchObject({
      type: 'integer',
      minimum: 0,
      maximum: 86400,
      default: 3600,
    });
  });

  it('documents what stream=true answers as events, and only where it answers them', () => {
    for (const path of ['/agents/{agent_id}/runs', '/teams/{team_id}/runs', '/workflows/{workflow_id}/runs', '/a2a/agents/{agent_id}']) {
      const { responses } = document.paths[path].post;
      expect(Object.keys(responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
      // Events are text, not the JSON answer's schema.
      expect(responses['200'].content['text/event-stream'].schema).toEqual({ type: 'string' });
      for (const [status, response] of Object.entries<any>(responses).filter(([status]) => status !== '200')) {
        expect([status, Object.keys(response.content ?? { 'application/json': {} })]).toEqual([status, ['application/json']]);
      }
    }
    expect(document.paths['/agents/{agent_id}/runs'].post.responses['200'].content['text/event-stream'].example).toMatch(
      /^event: RunStarted\ndata: \{.*\n\nevent: RunContent\n.*event: RunCompleted\n/s,
    );
  });

  it("gives each 422 an example naming one of the operation's own fields", () => {
    let checked = 0;
    for (const item of Object.values<any>(document.paths)) {
      for (const operation of Object.values<any>(item)) {
        const example = operation.responses?.['422']?.content?.['application/json']?.example;
        if (!example) {
          continue;
        }
        const [where, field] = example.detail[0].loc;
        if (where === 'query') {
          expect(operation.parameters.some((parameter: any) => parameter.in === 'query' && parameter.name === field)).toBe(true);
        } else {
          const ref = Object.values<any>(operation.requestBody.content)[0].schema.$ref.split('/').pop();
          expect(Object.keys(document.components.schemas[ref].properties)).toContain(field);
        }
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it("executes the memory routes' examples as they stand: a real fact, and a PATCH that keeps it", async () => {
    const example = (path: string, method: string) =>
      Object.values<any>(document.paths[path][method].requestBody.content['application/json'].examples)[0].value;
    const token = 'x'.repeat(24);
    const created = await call(api.url, 'POST', '/memories', { token, json: example('/memories', 'post') });
    expect(created.status, created.text).toBe(201);
    expect(created.body.memory).not.toBe('string');
    const patched = await call(api.url, 'PATCH', `/memories/${created.body.memory_id}`, {
      token,
      json: example('/memories/{memory_id}', 'patch'),
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.memory).toBe(created.body.memory);
  });

  it('serves Swagger UI at /docs', async () => {
    const page = await call(api.url, 'GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.text).toContain('swagger');
    // Every asset the page links loads from /docs (a broken link is a blank page).
    const assets = [...page.text.matchAll(/(?:href|src)="\.\/([^"]+)"/g)].map(([, path]) => path);
    expect(assets.length).toBeGreaterThan(2);
    for (const asset of assets) {
      expect((await call(api.url, 'GET', `/${asset}`)).status, asset).toBe(200);
    }
    // At /docs/ those relative links would resolve under /docs/docs/: it redirects to /docs.
    const slash = await fetch(`${api.url}/docs/`, { redirect: 'manual' });
    expect(slash.status).toBe(301);
    expect(new URL(slash.headers.get('location')!, `${api.url}/docs/`).href).toBe(`${api.url}/docs`);
  });
});

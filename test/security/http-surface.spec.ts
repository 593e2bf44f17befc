import { request as httpRequest } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../support/database';
import { expectErrorBody } from '../support/error-bodies';
import { ApiResponse, call } from '../support/http';
import { mintAccount, ROOT_KEY } from '../support/principals';
import { RunningApi, startApi, waitFor } from '../support/processes';

/**
 * The HTTP surface every route shares: how an empty body is read, which Host names an instance without
 * authentication answers (DNS rebinding), and the headers every response carries.
 */

/** One raw request with exactly the headers given (fetch will not send a chosen Host header). */
function rawRequest(baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<ApiResponse> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: url.hostname, port: url.port, method, path: url.pathname + url.search, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) {
            responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
          }
        }
        const parsed = (response.headers['content-type'] ?? '').includes('json') && text ? JSON.parse(text) : text;
        resolve({ status: response.statusCode ?? 0, body: parsed, headers: responseHeaders, text });
      });
    });
    request.on('error', reject);
    if (body !== undefined) {
      request.write(body);
    }
    request.end();
  });
}

const PUBLIC_HOST = 'platform.example.test:8443';

describe('the HTTP surface', () => {
  /** Auth mode none, with a PUBLIC_URL. */
  let open: RunningApi;
  /** Auth mode security_key. */
  let keyed: RunningApi;

  beforeAll(async () => {
    const [openDatabase, keyedDatabase] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    [open, keyed] = await Promise.all([
      startApi({ DATABASE_URL: openDatabase, PUBLIC_URL: `https://${PUBLIC_HOST}`, MCP_ENABLED: 'true', DEMO_COMPONENTS: 'true' }),
      // At info: the access log is read below.
      startApi({ DATABASE_URL: keyedDatabase, OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'true', DEMO_COMPONENTS: 'true', LOG_LEVEL: 'info' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([open?.stop(), keyed?.stop()]);
  });

  it("a JSON client's empty body is accepted on routes without a body", async () => {
    const account = await mintAccount(keyed.url, ROOT_KEY);
    const unknownId = '00000000-0000-4000-8000-000000000000';
    const auth = { authorization: `Bearer ${ROOT_KEY}` };
    const routes: [string, string][] = [
      ['POST', `/queue/jobs/${unknownId}/requeue`],
      ['POST', `/schedules/${unknownId}/trigger`],
      ['POST', `/agents/no-such-agent/runs/${unknownId}/cancel`],
      ['DELETE', `/schedules/${unknownId}`],
    ];
    const emptyBodies: Record<string, string>[] = [
      { 'content-type': 'application/json', 'content-length': '0' },
      { 'content-type': 'application/json; charset=utf-8', 'transfer-encoding': 'chunked' },
      { 'content-type': 'text/plain', 'content-length': '0' },
    ];
    for (const headers of emptyBodies) {
      for (const [method, path] of routes) {
        const response = await rawRequest(keyed.url, method, path, { ...auth, ...headers });
        // The route itself answered: the id is unknown.
        expectErrorBody(response, 404);
      }
      const revoked = await rawRequest(keyed.url, 'DELETE', `/service-accounts/${account.id}`, { ...auth, ...headers });
      expect(revoked.status, revoked.text).toBeLessThan(300);
    }
    // A route that needs a body answers an empty one as it answers a missing one: the validation body.
    const missing = await rawRequest(keyed.url, 'POST', '/service-accounts', auth);
    const empty = await rawRequest(keyed.url, 'POST', '/service-accounts', {
      ...auth,
      'content-type': 'application/json',
      'content-length': '0',
    });
    expect(missing.status, missing.text).toBe(422);
    expect(empty.status, empty.text).toBe(422);
    expect(empty.body).toEqual(missing.body);
    // Malformed JSON is still a clear 400 with the error body.
    const malformed = await call(keyed.url, 'POST', '/service-accounts', {
      token: ROOT_KEY,
      raw: { body: '{"name":', contentType: 'application/json' },
    });
    expectErrorBody(malformed, 400);
    expect(malformed.body.detail).toBe('Request body is not valid JSON');
    // JSON with a key the parser refuses (prototype poisoning) is refused too, and not called invalid JSON.
    for (const body of ['{"name":"x","__proto__":{"a":1}}', '{"name":"x","constructor":{"prototype":{"a":1}}}']) {
      const poisoned = await call(keyed.url, 'POST', '/service-accounts', {
        token: ROOT_KEY,
        raw: { body, contentType: 'application/json' },
      });
      expectErrorBody(poisoned, 400);
      expect(poisoned.body.detail, body).toContain('__proto__ or constructor.prototype key');
    }
  });

  it('a rebound DNS name cannot reach an open instance', async () => {
    for (const path of ['/info', '/docs', '/openapi.json', '/service-accounts', '/no-such-route']) {
      const response = await rawRequest(open.url, 'GET', path, { host: 'evil.example' });
      expectErrorBody(response, 403);
      expect(response.body.detail).toContain("Host 'evil.example' is not allowed");
      expect(response.body.detail).toContain('PUBLIC_URL');
      expect(response.body.detail).toContain('OS_SECURITY_KEY');
    }
    const mcp = await rawRequest(
      open.url,
      'POST',
      '/mcp',
      { host: 'evil.example:7777', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );
    expectErrorBody(mcp, 403);
    // A name that only looks like loopback, and PUBLIC_URL's name on another port, are foreign too.
    for (const host of ['127.0.0.1.evil.example', 'localhost.evil.example', 'platform.example.test', 'platform.example.test:9999']) {
      expectErrorBody(await rawRequest(open.url, 'GET', '/info', { host }), 403);
    }
  });

  it("an open instance still answers loopback names, PUBLIC_URL's host and health probes", async () => {
    const port = new URL(open.url).port;
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      'localhost',
      '127.0.0.2',
      '[::1]:7777',
      `LOCALHOST:${port}`,
      PUBLIC_HOST,
    ]) {
      const response = await rawRequest(open.url, 'GET', '/info', { host });
      expect(response.status, `${host}: ${response.text}`).toBe(200);
    }
    // Kubernetes probes send the pod IP as Host.
    for (const path of ['/health', '/readyz']) {
      const response = await rawRequest(open.url, 'GET', path, { host: '10.1.2.3:7777' });
      expect(response.status, `${path}: ${response.text}`).toBe(200);
    }
  });

  it('a page of another origin cannot change an open instance: a form it submits starts no run', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const post = (origin: string | undefined, api = open, headers: Record<string, string> = {}) =>
      rawRequest(api.url, 'POST', '/agents/echo-agent/runs', { ...form, ...(origin ? { origin } : {}), ...headers }, 'message=from+a+page');
    for (const origin of ['https://evil.example', 'null', `http://${PUBLIC_HOST}`, 'http://127.0.0.1.evil.example:7777']) {
      const refused = await post(origin);
      expectErrorBody(refused, 403);
      expect(refused.body.detail).toBe(
        `A page of origin '${origin}' may not change an instance without authentication; call it from this instance's own ` +
          'origin or a client that is not a browser page, or configure OS_SECURITY_KEY or a JWT key',
      );
    }
    const mcp = await rawRequest(
      open.url,
      'POST',
      '/mcp',
      { origin: 'https://evil.example', 'content-type': 'text/plain', accept: 'application/json, text/event-stream' },
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );
    expectErrorBody(mcp, 403);
    const sessions = await call<{ meta: { total_count: number } }>(open.url, 'GET', '/sessions');
    expect(sessions.body.meta.total_count).toBe(0);

    // Its own origin (Swagger UI's "Try it out"), a loopback page, and a client that is not a page are served;
    // so is a read, whose answer the page cannot see, and any request to an instance with authentication.
    for (const origin of [`https://${PUBLIC_HOST}`, 'http://localhost:5173', undefined]) {
      const served = await post(origin);
      expect(served.status, `${origin}: ${served.text}`).toBe(200);
    }
    expect((await rawRequest(open.url, 'GET', '/info', { origin: 'https://evil.example' })).status).toBe(200);
    const keyedPost = await post('https://evil.example', keyed, { authorization: `Bearer ${ROOT_KEY}` });
    expect(keyedPost.status, keyedPost.text).toBe(200);
  });

  it('an open instance listening beyond loopback says at start that anyone reaching its port can use it', async () => {
    const warning = /No OS_SECURITY_KEY or JWT key, and listening on 0\.0\.0\.0: anyone who can reach port \d+ can use this api/;
    const exposed = await startApi({ DATABASE_URL: await createTestDatabase(), HOST: '0.0.0.0', LOG_LEVEL: 'warn' });
    try {
      expect(exposed.output()).toMatch(warning);
    } finally {
      await exposed.stop();
    }
    for (const quiet of [open, keyed]) {
      expect(quiet.output()).not.toMatch(/anyone who can reach port/);
    }
  });

  it('an instance with authentication answers any Host', async () => {
    const response = await rawRequest(keyed.url, 'GET', '/service-accounts', { host: 'evil.example', authorization: `Bearer ${ROOT_KEY}` });
    expect(response.status, response.text).toBe(200);
    expect((await rawRequest(keyed.url, 'GET', '/info', { host: 'evil.example' })).status).toBe(200);
  });

  it('responses forbid framing, MIME sniffing and caching', async () => {
    const port = new URL(open.url).port;
    const responses = [
      await rawRequest(open.url, 'GET', '/health', { host: `127.0.0.1:${port}` }),
      await rawRequest(open.url, 'GET', '/docs', { host: `127.0.0.1:${port}` }),
      await rawRequest(open.url, 'GET', '/no-such-route', { host: `127.0.0.1:${port}` }),
      await rawRequest(open.url, 'GET', '/info', { host: 'evil.example' }),
      await rawRequest(open.url, 'GET', '/%E0%A4%A', { host: `127.0.0.1:${port}` }),
      await call(keyed.url, 'GET', '/service-accounts'),
      await call(keyed.url, 'POST', '/service-accounts', { token: ROOT_KEY, raw: { body: '{', contentType: 'application/json' } }),
    ];
    for (const response of responses) {
      const headers = response.headers;
      expect(headers.get('x-content-type-options'), response.text).toBe('nosniff');
      expect(headers.get('x-frame-options')).toBe('DENY');
      expect(headers.get('referrer-policy')).toBe('no-referrer');
      const csp = headers.get('content-security-policy') ?? '';
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/script-src[^;]*unsafe/);
      expect(headers.get('cache-control')).toBe('no-store');
    }
  });

  it('no cache keeps a response that carries a plaintext token', async () => {
    const minted = await call(keyed.url, 'POST', '/service-accounts', {
      token: ROOT_KEY,
      json: { name: 'cache-probe', scopes: [{ scope: 'agents:read' }] },
    });
    expect(minted.status, minted.text).toBe(201);
    expect(minted.headers.get('cache-control')).toBe('no-store');
    const rotated = await call(keyed.url, 'POST', `/service-accounts/${minted.body.id}/rotate`, { token: ROOT_KEY });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.token).toMatch(/^svc_pat_/);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
  });

  it('a credential a client puts in the query string stays out of the access log; the rest of the query is kept', async () => {
    const secret = 'svc_pat_QueryStringSecret0123456789';
    const response = await call(keyed.url, 'GET', `/service-accounts?limit=5&access_token=${secret}&token=${secret}`, { token: ROOT_KEY });
    expect(response.status, response.text).toBe(200);
    await waitFor(async () => keyed.output().includes('/service-accounts?limit=5'), 5_000, 'the access line');
    expect(keyed.output()).toContain('/service-accounts?limit=5&access_token=[redacted]&token=[redacted] 200');
    expect(keyed.output()).not.toContain('QueryStringSecret');
  });

  it("the docs' static files stay cacheable: a browser revalidates them rather than fetching them again", async () => {
    const bundle = await call(keyed.url, 'GET', '/docs/swagger-ui-bundle.js');
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('cache-control')).not.toContain('no-store');
    expect(bundle.headers.get('etag')).toBeTruthy();
  });
});

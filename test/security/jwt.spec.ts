import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../support/database';
import { expectErrorBody } from '../support/error-bodies';
import { call } from '../support/http';
import { JWT_SECRET, signJwt } from '../support/principals';
import { RunningApi, spawnNode, startApi } from '../support/processes';

/** Threat model, JWTs: a token must expire, and the keys that verify tokens must not be swappable in transit. */
describe('security: JWT verification', () => {
  let api: RunningApi;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, JWT_SECRET });
  });
  afterAll(() => api?.stop());

  it('a JWT without an exp claim is refused, however valid its signature', async () => {
    const forever = await new SignJWT({ sub: 'alice', scopes: ['config:read'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuedAt()
      .sign(new TextEncoder().encode(JWT_SECRET));
    const refused = await call(api.url, 'GET', '/config', { token: forever });
    expectErrorBody(refused, 401);
    expect(refused.body.detail).toMatch(/exp/);
    // Positive control: the same claims with an expiry pass.
    expect((await call(api.url, 'GET', '/config', { token: await signJwt({ sub: 'alice', scopes: ['config:read'] }) })).status).toBe(200);
  });

  it('a JWT whose sub or scopes the database could not store is a 401, never a 500 on the first write', async () => {
    const runs = ['agents:run', 'memories:write'];
    for (const claims of [
      { sub: 'a\u0000b', scopes: runs },
      { sub: 'x'.repeat(256), scopes: runs },
      { sub: 'bell\u0007', scopes: runs },
      { sub: 'half \ud800', scopes: runs },
      { sub: 'alice', scopes: [...runs, 'x\u0000y'] },
    ]) {
      const token = await signJwt(claims);
      for (const [method, path, json] of [
        ['GET', '/config', undefined],
        ['POST', '/agents/echo-agent/runs', { message: 'hi', background: true }],
        ['POST', '/memories', { memory: 'm' }],
      ] as const) {
        const refused = await call(api.url, method, path, { token, json });
        expectErrorBody(refused, 401);
        expect(refused.body.detail, JSON.stringify(claims)).toMatch(/^Invalid token: (sub|a scope)/);
      }
    }
    // Positive control: the longest sub the columns hold, with a pair that is whole (an emoji).
    const longest = await signJwt({ sub: `${'x'.repeat(253)}\ud83d\ude00`, scopes: runs });
    expect((await call(api.url, 'POST', '/memories', { token: longest, json: { memory: 'm' } })).status).toBe(201);
  });

  async function bootFailure(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
    const process = spawnNode('dist/apps/api/src/main.js', { HOST: '127.0.0.1', PORT: '0', DATABASE_URL: databaseUrl, ...env });
    const code = await Promise.race([process.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 30_000))]);
    await process.stop('SIGKILL');
    return { code: code === 'running' ? null : code, output: process.output() };
  }

  it.each([
    ['JWT_JWKS_URL', {}],
    ['MCP_OAUTH_JWKS_URL', { MCP_ENABLED: 'true', MCP_OAUTH_ISSUER: 'https://auth.example' }],
  ])('a %s over plain HTTP to another host stops boot: signing keys could be swapped in transit', async (variable, extra) => {
    for (const url of ['http://keys.example/jwks.json', 'http://127.evil.example/jwks.json', 'http://localhost.evil.example/jwks.json']) {
      const { code, output } = await bootFailure({ ...extra, [variable]: url });
      expect(code, output).toBe(1);
      expect(output).toContain(`${variable}=`);
      expect(output).toMatch(/must be an https URL/);
    }
  });

  it('short secrets boot with a warning naming each (never its value), and the short JWT secret verifies its tokens', async () => {
    const shortSecret = 'short-jwt-secret';
    const weak = await startApi({
      DATABASE_URL: databaseUrl,
      JWT_SECRET: shortSecret,
      OS_SECURITY_KEY: 'test-key',
      INTERNAL_SERVICE_TOKEN: 'short-hmac',
    });
    try {
      expect(weak.output()).toMatch(/JWT_SECRET is shorter than 32 characters/);
      expect(weak.output()).toMatch(/OS_SECURITY_KEY is shorter than 16 characters/);
      expect(weak.output()).toMatch(/INTERNAL_SERVICE_TOKEN is shorter than 32 characters/);
      expect(weak.output()).not.toMatch(/short-jwt-secret|test-key|short-hmac/);
      const token = await signJwt({ sub: 'alice', scopes: ['config:read'] }, shortSecret);
      expect((await call(weak.url, 'GET', '/config', { token })).status).toBe(200);
      expect((await call(weak.url, 'GET', '/config', { token: 'test-key' })).status).toBe(200);
    } finally {
      await weak.stop();
    }
    expect(api.output()).not.toMatch(/is shorter than/);
  });

  it('a JWKS URL on loopback over HTTP boots, and without JWT_AUDIENCE the boot warns', async () => {
    const local = await startApi({ DATABASE_URL: databaseUrl, JWT_JWKS_URL: 'http://127.0.0.1:9/jwks.json' });
    try {
      expect(local.output()).toMatch(/JWT_JWKS_URL is set without JWT_AUDIENCE/);
    } finally {
      await local.stop();
    }
    const withAudience = await startApi({
      DATABASE_URL: databaseUrl,
      JWT_JWKS_URL: 'https://keys.example/jwks.json',
      JWT_AUDIENCE: 'platform',
    });
    try {
      expect(withAudience.output()).not.toMatch(/without JWT_AUDIENCE/);
    } finally {
      await withAudience.stop();
    }
  });
});

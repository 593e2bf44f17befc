import { describe, expect, it } from 'vitest';

import { EnvError, loadEnv } from './env';

describe('loadEnv', () => {
  it('applies the documented defaults', () => {
    const env = loadEnv({});
    expect(env).toMatchObject({
      HOST: '127.0.0.1',
      PORT: 7777,
      QUEUE_ENABLED: true,
      QUEUE_LOCK_GRACE_SECONDS: 60,
      SERVICE_ACCOUNT_CACHE_TTL_SECONDS: 30,
      MCP_ENABLED: false,
      DATABASE_POOL_SIZE: 20,
    });
    expect(env.publicUrl).toBe('http://127.0.0.1:7777');
    expect(env.jwtScopesEnforced).toBe(false);
  });

  it('parses booleans and integers from their usual spellings', () => {
    const env = loadEnv({ QUEUE_ENABLED: 'off', MCP_ENABLED: 'YES', PORT: ' 8080 ', JWT_SECRET: 's'.repeat(32) });
    expect(env).toMatchObject({ QUEUE_ENABLED: false, MCP_ENABLED: true, PORT: 8080 });
    expect(env.jwtScopesEnforced).toBe(true);
  });

  it('reports every bad variable at once', () => {
    let error: EnvError | undefined;
    try {
      loadEnv({ PORT: '70000', USER_ISOLATION: 'sometimes', JWT_JWKS_URL: 'not a url', QUEUE_LOCK_GRACE_SECONDS: '-1' });
    } catch (caught) {
      error = caught as EnvError;
    }
    expect(error).toBeInstanceOf(EnvError);
    expect(error!.problems).toHaveLength(4);
    expect(error!.message).toContain('PORT=70000');
    expect(error!.message).toContain('USER_ISOLATION="sometimes"');
    expect(error!.message).toContain('JWT_JWKS_URL="not a url"');
    expect(error!.message).toContain('QUEUE_LOCK_GRACE_SECONDS=-1');
  });

  it('bounds WORKER_PREFETCH_HORIZON_MS to 1..60000 ms (default 100), naming a value outside or not a whole number', () => {
    expect(loadEnv({}).WORKER_PREFETCH_HORIZON_MS).toBe(100);
    expect(loadEnv({ WORKER_PREFETCH_HORIZON_MS: '60000' }).WORKER_PREFETCH_HORIZON_MS).toBe(60_000);
    for (const bad of ['0', '60001', '1.5', 'soon']) {
      expect(() => loadEnv({ WORKER_PREFETCH_HORIZON_MS: bad })).toThrow(/WORKER_PREFETCH_HORIZON_MS=/);
    }
  });

  it('refuses API_METRICS_PORT equal to PORT (the api listens there), among the other problems', () => {
    expect(() => loadEnv({ PORT: '9000', API_METRICS_PORT: '9000' })).toThrow(
      'API_METRICS_PORT=9000: must differ from PORT, where the api itself listens',
    );
    expect(() => loadEnv({ API_METRICS_PORT: '7777' })).toThrow(/must differ from PORT/);
    expect(loadEnv({ PORT: '9000', API_METRICS_PORT: '9001' }).API_METRICS_PORT).toBe(9001);
  });

  it('refuses a DATABASE_URL the PostgreSQL client cannot read, naming the variable but never its value', () => {
    for (const url of ['postgres://app:s3cret@db:notaport/app', 'postgres://app:s3cret%zz@db/app']) {
      let message = '';
      try {
        loadEnv({ DATABASE_URL: url });
      } catch (error) {
        message = (error as EnvError).message;
      }
      expect(message, url).toMatch(/DATABASE_URL.*is not a readable URL: check the port, and percent-encode/);
      expect(message, url).not.toContain('s3cret');
    }
    for (const url of ['postgres://app:p%40ss@db:5432/app?sslmode=verify-full', 'postgresql:///var/run/postgresql/app']) {
      expect(loadEnv({ DATABASE_URL: url }).databaseUrl).toBe(url);
    }
  });

  it('never prints a pasted private key, nor the user, password or query values of a refused URL', () => {
    let message = '';
    try {
      loadEnv({
        JWT_PUBLIC_KEY: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector-user:collector-pass@collector.internal:4318/?api_key=otlp-secret&tenant=a',
      });
    } catch (error) {
      message = (error as EnvError).message;
    }
    expect(message).toContain('JWT_PUBLIC_KEY=(value hidden: a private key): must be a PEM public key');
    expect(message).toContain(
      'OTEL_EXPORTER_OTLP_ENDPOINT="ftp://***:***@collector.internal:4318/?api_key=***&tenant=***": must be an http(s) URL',
    );
    for (const secret of ['MIIEvQ', 'collector-user', 'collector-pass', 'otlp-secret']) {
      expect(message).not.toContain(secret);
    }
  });

  it('accepts secrets of any length (the api warns about short ones at boot) and a lock grace down to 1 s', () => {
    expect(loadEnv({ OS_SECURITY_KEY: 'test-key', JWT_SECRET: 'short-secret', QUEUE_LOCK_GRACE_SECONDS: '1' })).toMatchObject({
      OS_SECURITY_KEY: 'test-key',
      JWT_SECRET: 'short-secret',
      QUEUE_LOCK_GRACE_SECONDS: 1,
    });
    expect(() => loadEnv({ QUEUE_LOCK_GRACE_SECONDS: '0' })).toThrow(/QUEUE_LOCK_GRACE_SECONDS=0: must be a whole number from 1 to 86400/);
  });

  it('makes /mcp an OAuth-protected resource only with MCP on and an issuer, whose JWKS is then required', () => {
    expect(() => loadEnv({ MCP_ENABLED: 'true', MCP_OAUTH_ISSUER: 'https://auth.example.com' })).toThrow(
      /MCP_OAUTH_JWKS_URL=undefined: must be an https URL .*\(required with MCP_OAUTH_ISSUER\)/,
    );
    const oauth = {
      MCP_OAUTH_ISSUER: 'https://auth.example.com',
      MCP_OAUTH_JWKS_URL: 'https://auth.example.com/jwks',
      PUBLIC_URL: 'https://svc.example.com/',
    };
    expect(loadEnv(oauth).mcpOAuthConfigured).toBe(false);
    const env = loadEnv({ ...oauth, MCP_ENABLED: 'true' });
    expect(env.mcpOAuthConfigured).toBe(true);
    expect(env.mcpResourceUrl).toBe('https://svc.example.com/mcp');
    expect(env.mcpResourceMetadataUrl).toBe('https://svc.example.com/.well-known/oauth-protected-resource/mcp');
  });

  it.each([
    ['https://keys.example/jwks.json', true],
    ['http://127.0.0.1:8080/jwks.json', true],
    ['http://localhost/jwks.json', true],
    ['http://[::1]:9000/jwks.json', true],
    ['http://keys.example/jwks.json', false],
    ['http://127.evil.example/jwks.json', false],
    ['http://localhost.evil.example/jwks.json', false],
    ['ftp://keys.example/jwks.json', false],
  ])('accepts JWT_JWKS_URL=%s: %s', (url, accepted) => {
    const load = () => loadEnv({ JWT_JWKS_URL: url });
    if (accepted) {
      expect(load().JWT_JWKS_URL).toBe(url);
    } else {
      expect(load).toThrow(/JWT_JWKS_URL=.*must be an https URL/);
    }
  });
});

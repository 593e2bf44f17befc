import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { JWT_SECRET, mintAccount, ROOT_KEY, signJwt, uniqueName } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';

const grant = (...scopes: string[]) => scopes.map((scope) => ({ scope }));

describe('auth mode none (no credential configured)', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase() });
  });
  afterAll(() => api?.stop());

  it('reports auth_mode none and serves anonymous requests', async () => {
    expect((await call(api.url, 'GET', '/info')).body.auth_mode).toBe('none');
    const config = await call(api.url, 'GET', '/config');
    expect(config.status).toBe(200);
    expect(config.body).toMatchObject({ principal: null, credential: 'anonymous', scopes: [] });
  });

  it('refuses anonymous minting with 401 (rule 3), whatever the body: before reading it', async () => {
    const detail =
      'Minting a service account needs a credential, even on an instance without authentication: the OS security key, ' +
      'or a JWT or service-account token with service_accounts:write (or platform:admin)';
    for (const json of [{ name: uniqueName() }, {}, { name: 'Not A Valid Name', scopes: 'nope' }]) {
      const response = await call(api.url, 'POST', '/service-accounts', { json });
      expect(response.status, JSON.stringify(json)).toBe(401);
      expect(response.body).toEqual({ detail });
    }
  });

  it('refuses anonymous rotation with 401 too: it hands out a token, like minting', async () => {
    const detail =
      'Rotating a service account token needs a credential, even on an instance without authentication: the OS security key, ' +
      'or a JWT or service-account token with service_accounts:write (or platform:admin)';
    for (const json of [{}, { grace_seconds: -1 }]) {
      const response = await call(api.url, 'POST', '/service-accounts/00000000-0000-4000-8000-000000000000/rotate', { json });
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ detail });
    }
  });

  it('ignores a token that does not verify, and applies the scopes of one that does (rules 13, 15)', async () => {
    const unknown = await call(api.url, 'GET', '/config', { token: `svc_pat_${'x'.repeat(43)}` });
    expect(unknown.status).toBe(200);
    expect(unknown.body.principal).toBeNull();
    const jwt = await call(api.url, 'GET', '/config', { token: await signJwt({ sub: 'alice' }) });
    expect(jwt.status).toBe(200);
    expect(jwt.body.principal).toBeNull();
  });

  it('still enforces the scopes of a verified token', async () => {
    const db = await createTestDatabase();
    const keyed = await startApi({ DATABASE_URL: db, OS_SECURITY_KEY: ROOT_KEY });
    const account = await mintAccount(keyed.url, ROOT_KEY, { scopes: ['agents:run'] });
    await keyed.stop();
    const open = await startApi({ DATABASE_URL: db });
    try {
      const response = await call(open.url, 'GET', '/config', { token: account.token });
      expect(response.status).toBe(403);
      expect(response.body.detail).toBe('Insufficient permissions. Required scope(s): config:read');
    } finally {
      await open.stop();
    }
  });
});

describe('auth mode jwt', () => {
  let api: RunningApi;
  let databaseUrl: string;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, JWT_SECRET, OS_SECURITY_KEY: ROOT_KEY, JWT_AUDIENCE: 'platform' });
  });
  afterAll(() => api?.stop());

  const jwt = (sub: string, scopes: string[], extra: Record<string, unknown> = {}) => signJwt({ sub, scopes, aud: 'platform', ...extra });

  it('reports auth_mode jwt and requires a credential', async () => {
    expect((await call(api.url, 'GET', '/info')).body.auth_mode).toBe('jwt');
    const response = await call(api.url, 'GET', '/config');
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'Authorization header missing' });
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('accepts a valid JWT and enforces its scopes', async () => {
    const ok = await call(api.url, 'GET', '/config', { token: await jwt('alice', ['config:read']) });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ principal: 'alice', credential: 'jwt', scopes: ['config:read'] });
    const denied = await call(api.url, 'GET', '/config', { token: await jwt('alice', ['agents:run']) });
    expect(denied.status).toBe(403);
    expect(denied.body.detail).toBe('Insufficient permissions. Required scope(s): config:read');
  });

  it('rejects bad signatures, wrong audiences and expired tokens with 401', async () => {
    const forged = await signJwt({ sub: 'alice', scopes: ['config:read'], aud: 'platform' }, 'another-secret-0123456789abcdef0123456789');
    const wrongAudience = await signJwt({ sub: 'alice', scopes: ['config:read'], aud: 'elsewhere' });
    const expired = await signJwt({ sub: 'alice', scopes: ['config:read'], aud: 'platform' }, JWT_SECRET, '-1m');
    for (const token of [forged, wrongAudience, expired, 'not-a-jwt']) {
      const response = await call(api.url, 'GET', '/config', { token });
      expect(response.status).toBe(401);
      expect(response.body.detail).toMatch(/^(Invalid token|Token has expired)/);
    }
  });

  it('rejects a JWT whose sub claims an sa: identity (rule 10)', async () => {
    const response = await call(api.url, 'GET', '/config', { token: await jwt('sa:impostor', ['config:read', 'platform:admin']) });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'Invalid token subject' });
  });

  it('says so when a credential is sent with "Bearer" twice (pasted with its scheme where the credential alone goes)', async () => {
    const response = await call(api.url, 'GET', '/config', { headers: { authorization: `Bearer Bearer ${ROOT_KEY}` } });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'Invalid authentication token: "Bearer" appears twice; give the credential alone after it' });
    expect(response.text).not.toContain(ROOT_KEY);
  });

  it('keeps the OS security key as a root credential', async () => {
    const config = await call(api.url, 'GET', '/config', { token: ROOT_KEY });
    expect(config.status).toBe(200);
    // No principal and no scopes, yet every right: /config says which credential it is.
    expect(config.body).toMatchObject({ principal: null, credential: 'security_key', scopes: [] });
  });

  it('lets a JWT with service_accounts:write grant only scopes it holds (rule 8)', async () => {
    const writer = await jwt('bob', ['service_accounts:write', 'agents:run', 'config:read']);
    const granted = await call(api.url, 'POST', '/service-accounts', {
      token: writer,
      json: { name: uniqueName(), scopes: grant('agents:echo-agent:run', 'config:read') },
    });
    expect(granted.status).toBe(201);
    expect(granted.body.created_by).toBe('bob');
    const refused = await call(api.url, 'POST', '/service-accounts', {
      token: writer,
      json: { name: uniqueName(), scopes: grant('sessions:read') },
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: 'Cannot grant scope(s) you do not hold: sessions:read' });
    const withoutWrite = await call(api.url, 'POST', '/service-accounts', {
      token: await jwt('carol', ['agents:run']),
      json: { name: uniqueName() },
    });
    expect(withoutWrite.status).toBe(403);
    expect(withoutWrite.body.detail).toBe('Insufficient permissions. Required scope(s): service_accounts:write');
  });

  it('lets a JWT rotate only accounts whose scopes it holds: the new token would grant them', async () => {
    // Dora minted both while her JWT held sessions:read; her JWT now holds less.
    const before = await jwt('dora', ['service_accounts:write', 'config:read', 'sessions:read']);
    const writer = await jwt('dora', ['service_accounts:write', 'config:read']);
    const narrow = await mintAccount(api.url, before, { scopes: ['config:read'] });
    const wide = await mintAccount(api.url, before, { scopes: ['config:read', 'sessions:read'] });
    const refused = await call(api.url, 'POST', `/service-accounts/${wide.id}/rotate`, { token: writer, json: {} });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: 'Cannot grant scope(s) you do not hold: sessions:read' });
    expect((await call(api.url, 'GET', '/config', { token: wide.token })).status).toBe(200);
    const rotated = await call(api.url, 'POST', `/service-accounts/${narrow.id}/rotate`, { token: writer, json: { grace_seconds: 0 } });
    expect(rotated.status).toBe(200);
    expect((await call(api.url, 'GET', '/config', { token: rotated.body.token })).status).toBe(200);
  });

  it("refuses to revoke or rotate another principal's account, though user isolation off lists it; its minter and an admin may", async () => {
    const alice = await jwt('alice', ['service_accounts:write', 'config:read']);
    const bob = await jwt('bob', ['service_accounts:write', 'service_accounts:read', 'config:read']);
    const account = await mintAccount(api.url, alice, { scopes: ['config:read'] });
    const listed = await call(api.url, 'GET', '/service-accounts?limit=100', { token: bob });
    expect(listed.body.data.map((row: { id: string }) => row.id)).toContain(account.id);
    const attempts = [
      ['rotate', await call(api.url, 'POST', `/service-accounts/${account.id}/rotate`, { token: bob, json: { grace_seconds: 0 } })],
      ['revoke', await call(api.url, 'DELETE', `/service-accounts/${account.id}`, { token: bob })],
    ] as const;
    for (const [action, refused] of attempts) {
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({
        detail: `Only the principal that minted service account '${account.name}', or an admin (platform:admin), may ${action} it`,
      });
    }
    expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
    const rotated = await call(api.url, 'POST', `/service-accounts/${account.id}/rotate`, { token: alice, json: { grace_seconds: 0 } });
    expect(rotated.status).toBe(200);
    const admin = await jwt('root-user', ['platform:admin']);
    expect((await call(api.url, 'DELETE', `/service-accounts/${account.id}`, { token: admin })).status).toBe(200);
    expect((await call(api.url, 'GET', '/config', { token: rotated.body.token })).status).toBe(401);
  });

  it('lets an admin JWT grant anything', async () => {
    const admin = await jwt('root-user', ['platform:admin']);
    const response = await call(api.url, 'POST', '/service-accounts', {
      token: admin,
      json: { name: uniqueName(), scopes: grant('sessions:delete'), allow_privileged_scopes: true },
    });
    expect(response.status).toBe(201);
  });

  it('self-scopes service accounts: a token lists only the accounts it minted (rule 11)', async () => {
    const minter = await mintAccount(api.url, ROOT_KEY, {
      scopes: ['service_accounts:write', 'service_accounts:read', 'config:read'],
      privileged: true,
    });
    const child = await mintAccount(api.url, minter.token, { scopes: ['config:read'] });
    const listed = await call(api.url, 'GET', '/service-accounts?limit=100', { token: minter.token });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((account: { id: string }) => account.id)).toEqual([child.id]);
    expect(child.created_by).toBe(`sa:${minter.name}`);
    const someoneElses = await mintAccount(api.url, ROOT_KEY);
    const revokeOther = await call(api.url, 'DELETE', `/service-accounts/${someoneElses.id}`, { token: minter.token });
    expect(revokeOther.status).toBe(404);
  });

  it('bypasses self-scoping for platform:admin', async () => {
    const admin = await mintAccount(api.url, ROOT_KEY, { scopes: ['platform:admin'], privileged: true });
    const listed = await call(api.url, 'GET', '/service-accounts?limit=100', { token: admin.token });
    expect(listed.body.meta.total_count).toBeGreaterThan(3);
  });
});

describe('JWT with AUTHORIZATION_ENABLED=false and USER_ISOLATION=true', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      JWT_SECRET,
      AUTHORIZATION_ENABLED: 'false',
      USER_ISOLATION: 'true',
      OS_SECURITY_KEY: ROOT_KEY,
    });
  });
  afterAll(() => api?.stop());

  it('does not enforce JWT scopes, but always enforces token scopes (rule 13)', async () => {
    expect((await call(api.url, 'GET', '/config', { token: await signJwt({ sub: 'dave', scopes: [] }) })).status).toBe(200);
    const account = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run'] });
    expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(403);
  });

  it('scopes JWT users to their own rows under USER_ISOLATION', async () => {
    const erin = await signJwt({ sub: 'erin', scopes: ['service_accounts:write', 'service_accounts:read', 'config:read'] });
    const frank = await signJwt({ sub: 'frank', scopes: ['service_accounts:write', 'service_accounts:read', 'config:read'] });
    const erins = await call(api.url, 'POST', '/service-accounts', {
      token: erin,
      json: { name: uniqueName(), scopes: grant('config:read') },
    });
    expect(erins.status).toBe(201);
    const seenByFrank = await call(api.url, 'GET', '/service-accounts', { token: frank });
    expect(seenByFrank.body.data.some((account: { id: string }) => account.id === erins.body.id)).toBe(false);
    const seenByErin = await call(api.url, 'GET', '/service-accounts', { token: erin });
    expect(seenByErin.body.data.map((account: { id: string }) => account.id)).toEqual([erins.body.id]);
  });
});

describe('verification cache across replicas (rule 14)', () => {
  // Long enough that the checks made within it fit on a loaded machine.
  const TTL_MS = 5000;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** Waits until the cached replica's entry, filled by `filledAt` (the filling response's arrival), is past the TTL (with a margin). */
  const pastTtl = (filledAt: number) => sleep(Math.max(0, filledAt + TTL_MS + 700 - Date.now()));

  it('revokes (and rotates without grace) at once on the handling replica, within the TTL on others, and at once everywhere with TTL 0', async () => {
    const databaseUrl = await createTestDatabase();
    const [revoking, cached, uncached] = await Promise.all([
      startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY }),
      startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, SERVICE_ACCOUNT_CACHE_TTL_SECONDS: String(TTL_MS / 1000) }),
      startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '0' }),
    ]);
    try {
      const account = await mintAccount(revoking.url, ROOT_KEY);
      for (const api of [revoking, uncached]) {
        expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
      }
      // The cached replica verifies (and caches) last, right before the revocation, so its TTL runs from here.
      expect((await call(cached.url, 'GET', '/config', { token: account.token })).status).toBe(200);
      let filledAt = Date.now();
      await call(revoking.url, 'DELETE', `/service-accounts/${account.id}`, { token: ROOT_KEY });
      expect((await call(revoking.url, 'GET', '/config', { token: account.token })).status).toBe(401);
      // Within the TTL the other replica still answers from its cache...
      expect((await call(cached.url, 'GET', '/config', { token: account.token })).status).toBe(200);
      expect((await call(uncached.url, 'GET', '/config', { token: account.token })).status).toBe(401);
      // ...and once the TTL has passed it looks the token up again and refuses it.
      await pastTtl(filledAt);
      expect((await call(cached.url, 'GET', '/config', { token: account.token })).status).toBe(401);

      // A rotation without grace is the same: at once here and without a cache, within the TTL where cached.
      const rotating = await mintAccount(revoking.url, ROOT_KEY);
      for (const api of [revoking, uncached]) {
        expect((await call(api.url, 'GET', '/config', { token: rotating.token })).status).toBe(200);
      }
      expect((await call(cached.url, 'GET', '/config', { token: rotating.token })).status).toBe(200);
      filledAt = Date.now();
      const rotated = await call(revoking.url, 'POST', `/service-accounts/${rotating.id}/rotate`, {
        token: ROOT_KEY,
        json: { grace_seconds: 0 },
      });
      expect((await call(revoking.url, 'GET', '/config', { token: rotating.token })).status).toBe(401);
      expect((await call(cached.url, 'GET', '/config', { token: rotating.token })).status).toBe(200);
      expect((await call(uncached.url, 'GET', '/config', { token: rotating.token })).status).toBe(401);
      for (const api of [revoking, cached, uncached]) {
        expect((await call(api.url, 'GET', '/config', { token: rotated.body.token })).status).toBe(200);
      }
      await pastTtl(filledAt);
      expect((await call(cached.url, 'GET', '/config', { token: rotating.token })).status).toBe(401);
      expect((await call(cached.url, 'GET', '/config', { token: rotated.body.token })).status).toBe(200);
    } finally {
      await Promise.all([revoking.stop(), cached.stop(), uncached.stop()]);
    }
    // Three api processes boot here; on two shared cores that alone can take most of the default 30 s.
  }, 90_000);

  it('drops a cached verification after SERVICE_ACCOUNT_CACHE_TTL_SECONDS: a token revoked in the database is accepted from the cache, then refused', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await startApi({
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      SERVICE_ACCOUNT_CACHE_TTL_SECONDS: String(TTL_MS / 1000),
    });
    try {
      const account = await mintAccount(api.url, ROOT_KEY);
      expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
      const filledAt = Date.now();
      // Revoked behind the api's back, as another replica or an operator's SQL would: no cache invalidation.
      await query(databaseUrl, 'UPDATE service_accounts SET revoked_at = now() WHERE id = $1', [account.id]);
      expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
      await pastTtl(filledAt);
      expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(401);
      // A token never cached is looked up at once: the revocation is seen.
      const other = await mintAccount(api.url, ROOT_KEY);
      await query(databaseUrl, 'UPDATE service_accounts SET revoked_at = now() WHERE id = $1', [other.id]);
      expect((await call(api.url, 'GET', '/config', { token: other.token })).status).toBe(401);
    } finally {
      await api.stop();
    }
  }, 60_000);
});

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AuthorizationServer } from '../../../test/support/authorization-server';
import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { callTool, connectMcp, INITIALIZE_REQUEST, MCP_HEADERS } from '../../../test/support/mcp';
import { JWT_SECRET, mintAccount, ROOT_KEY, signJwt } from '../../../test/support/principals';
import { RunningApi, startApi, startWorker, waitFor } from '../../../test/support/processes';

describe('MCP off (the default)', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY });
  });
  afterAll(() => api?.stop());

  it('answers an initialize POST to /mcp with 404 and reports nothing mounted', async () => {
    const response = await call(api.url, 'POST', '/mcp', { json: INITIALIZE_REQUEST, headers: MCP_HEADERS, token: ROOT_KEY });
    expect(response.status).toBe(404);
    expect((await call(api.url, 'GET', '/info')).body.mcp).toEqual({ enabled: false, path: null, oauth: null });
    expect((await call(api.url, 'GET', '/config', { token: ROOT_KEY })).body.mcp).toEqual({ enabled: false, path: null, oauth: null });
  });
});

describe('MCP on, security-key mode', () => {
  let api: RunningApi;
  const clients: Client[] = [];
  const connect = async (token?: string) => {
    const client = await connectMcp(api.url, token);
    clients.push(client);
    return client;
  };
  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'true' });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await api?.stop();
  });

  it('reports the mount on /info and /config, without OAuth', async () => {
    expect((await call(api.url, 'GET', '/info')).body.mcp).toEqual({ enabled: true, path: '/mcp', oauth: null });
    expect((await call(api.url, 'GET', '/config', { token: ROOT_KEY })).body.mcp).toEqual({ enabled: true, path: '/mcp', oauth: null });
  });

  it('initializes and lists tools, each naming the REST route and scope it mirrors', async () => {
    const client = await connect(ROOT_KEY);
    expect(client.getServerVersion()).toMatchObject({ name: 'platform-service' });
    // Stateless: no stream stays open to carry a list_changed notification, so none is promised.
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: false });
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(byName.get_config._meta).toEqual({ 'platform/rest-route': 'GET /config', 'platform/required-scope': 'config:read' });
    expect(byName.list_service_accounts._meta).toEqual({
      'platform/rest-route': 'GET /service-accounts',
      'platform/required-scope': 'service_accounts:read',
    });
    for (const tool of tools) {
      expect(tool._meta?.['platform/rest-route'], tool.name).toMatch(/^(GET|POST|PATCH|PUT|DELETE) \//);
      expect(tool.inputSchema.type).toBe('object');
    }
  });

  it('tools/list answers only the tools the caller may call; a hidden tool still answers the scope error', async () => {
    const names = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name).sort();
    const all = await names(await connect(ROOT_KEY));
    expect(all).toEqual(
      expect.arrayContaining(['list_queue_jobs', 'create_schedule', 'revoke_service_account', 'run_agent', 'get_config']),
    );

    const defaults = await mintAccount(api.url, ROOT_KEY);
    expect(defaults.scopes).toEqual(['agents:run', 'teams:run', 'workflows:run', 'sessions:read', 'config:read']);
    const client = await connect(defaults.token);
    const seen = await names(client);
    expect(seen).toEqual(
      expect.arrayContaining([
        'run_agent',
        'get_agent_run',
        'cancel_agent_run',
        'run_team',
        'run_workflow',
        'get_config',
        'list_sessions',
        'get_session',
      ]),
    );
    for (const hidden of [
      'list_queue_jobs',
      'get_queue_stats',
      'create_schedule',
      'list_schedules',
      'list_service_accounts',
      'revoke_service_account',
      'list_agents',
    ]) {
      expect(seen, hidden).not.toContain(hidden);
    }
    // Exactly the tools whose REST route the same token passes.
    for (const tool of (await (await connect(ROOT_KEY)).listTools()).tools) {
      const scope = tool._meta!['platform/required-scope'] as string;
      expect(seen.includes(tool.name), `${tool.name} (${scope})`).toBe(defaults.scopes.includes(scope));
    }
    expect(await callTool(client, 'list_queue_jobs')).toMatchObject({
      isError: true,
      text: '403: Insufficient permissions. Required scope(s): platform:admin',
    });
    expect(await callTool(client, 'create_schedule', { name: 'x', cron_expr: '* * * * *', endpoint: '/config' })).toMatchObject({
      isError: true,
      text: '403: Insufficient permissions. Required scope(s): schedules:write',
    });
    const revoke = await callTool(client, 'revoke_service_account', { id: defaults.id });
    expect(revoke.text).toBe('403: Insufficient permissions. Required scope(s): service_accounts:write');

    // A grant for one component lists that resource's per-component tools; a call for another component is refused.
    const echoOnly = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:echo-agent:run'] });
    const narrow = await connect(echoOnly.token);
    expect(await names(narrow)).toEqual(['cancel_agent_run', 'get_agent_run', 'run_agent']);
    expect((await callTool(narrow, 'run_agent', { agent_id: 'other-agent', message: 'hi' })).text).toBe(
      '403: Insufficient permissions. Required scope(s): agents:run or agents:other-agent:run',
    );

    const admin = await mintAccount(api.url, ROOT_KEY, { scopes: ['platform:admin'], privileged: true });
    expect(await names(await connect(admin.token))).toEqual(all);
  });

  it('runs a tool as the token principal', async () => {
    const account = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read'] });
    const result = await callTool(await connect(account.token), 'get_config');
    expect(result.isError).toBe(false);
    expect(result.structured).toMatchObject({ principal: `sa:${account.name}`, scopes: ['config:read'], auth_mode: 'security_key' });
    expect(JSON.parse(result.text)).toEqual(result.structured);
  });

  it('refuses a tool outside the token scopes with a readable tool error, like REST', async () => {
    const account = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run'] });
    const client = await connect(account.token);
    const refused = await callTool(client, 'get_config');
    expect(refused).toMatchObject({ isError: true, text: '403: Insufficient permissions. Required scope(s): config:read' });
    const rest = await call(api.url, 'GET', '/config', { token: account.token });
    expect(rest.status).toBe(403);
    expect(refused.text).toBe(`403: ${rest.body.detail}`);
    expect((await callTool(client, 'list_service_accounts')).text).toBe(
      '403: Insufficient permissions. Required scope(s): service_accounts:read',
    );
    expect((await callTool(client, 'revoke_service_account', { id: account.id })).isError).toBe(true);
    expect(
      (await call(api.url, 'GET', '/service-accounts', { token: ROOT_KEY })).body.data.find((row: { id: string }) => row.id === account.id)
        .revoked_at,
    ).toBeNull();
  });

  it('validates tool arguments with the REST route rules', async () => {
    const client = await connect(ROOT_KEY);
    const tooMany = await callTool(client, 'list_service_accounts', { limit: 1000 });
    expect(tooMany.isError).toBe(true);
    expect(tooMany.text).toMatch(/^422: Invalid arguments: limit: /);
    const notUuid = await callTool(client, 'revoke_service_account', { id: 'nope' });
    expect(notUuid.text).toBe('422: Invalid arguments: id: id must be a UUID');
  });

  it('lists and revokes service accounts through tools, never showing a token', async () => {
    const account = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read'] });
    const client = await connect(ROOT_KEY);
    const listed = await callTool(client, 'list_service_accounts', { limit: 100 });
    expect(listed.isError).toBe(false);
    expect(listed.structured.data.map((row: { name: string }) => row.name)).toContain(account.name);
    expect(listed.text).not.toContain(account.token);
    const revoked = await callTool(client, 'revoke_service_account', { id: account.id });
    expect(revoked.structured).toMatchObject({ id: account.id, revoked_at: expect.any(Number) });
    expect((await call(api.url, 'GET', '/config', { token: account.token })).status).toBe(401);
  });

  it('refuses an anonymous request with 401 and a Bearer challenge', async () => {
    const response = await call(api.url, 'POST', '/mcp', { json: INITIALIZE_REQUEST, headers: MCP_HEADERS });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'Authorization header required' });
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('refuses a foreign browser Origin (DNS rebinding) and answers GET with 405', async () => {
    const foreign = await call(api.url, 'POST', '/mcp', {
      json: INITIALIZE_REQUEST,
      token: ROOT_KEY,
      headers: { ...MCP_HEADERS, origin: 'http://attacker.example' },
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({ detail: 'Origin not allowed' });
    const local = await call(api.url, 'POST', '/mcp', {
      json: INITIALIZE_REQUEST,
      token: ROOT_KEY,
      headers: { ...MCP_HEADERS, origin: 'http://localhost:6274' },
    });
    expect(local.status).toBe(200);
    const get = await call(api.url, 'GET', '/mcp', { token: ROOT_KEY, headers: MCP_HEADERS });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('answers DELETE /mcp with 405 (stateless: no session to end), and the endpoint still serves POST after', async () => {
    const deleted = await call(api.url, 'DELETE', '/mcp', { token: ROOT_KEY, headers: { ...MCP_HEADERS, 'mcp-session-id': 'any' } });
    expect(deleted.status).toBe(405);
    expect(deleted.headers.get('allow')).toBe('POST');
    const after = await call(api.url, 'POST', '/mcp', { json: INITIALIZE_REQUEST, token: ROOT_KEY, headers: MCP_HEADERS });
    expect(after.status).toBe(200);
  });

  it('answers JSON that is no JSON-RPC message with Invalid Request, and bad params with Invalid params', async () => {
    const post = (json: unknown) => call(api.url, 'POST', '/mcp', { json, token: ROOT_KEY, headers: MCP_HEADERS });
    for (const [json, id] of [
      [{ id: 1, method: 'tools/list' }, 1],
      [{ jsonrpc: '2.0', id: 2, method: 'tools/call', params: null }, 2],
      [{ jsonrpc: '2.0', id: { a: 1 }, method: 'tools/list' }, null],
      [[], null],
      [[1, 2], null],
    ] as const) {
      const refused = await post(json);
      expect(refused.status, JSON.stringify(json)).toBe(400);
      expect(refused.body, JSON.stringify(json)).toEqual({
        jsonrpc: '2.0',
        id,
        error: { code: -32600, message: expect.stringMatching(/^Invalid Request/) },
      });
    }
    const initialize = { ...INITIALIZE_REQUEST, id: 3 };
    for (const [json, where] of [
      [{ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_agents', arguments: [1] } }, 'params.arguments'],
      [{ jsonrpc: '2.0', id: 3, method: 'tools/call' }, 'params'],
      [{ ...initialize, params: { ...initialize.params, protocolVersion: 5 } }, 'params.protocolVersion'],
      [{ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: 5 } }, 'params.cursor'],
    ] as const) {
      const refused = await post(json);
      expect(refused.status, JSON.stringify(json)).toBe(200);
      expect(refused.body, JSON.stringify(json)).toEqual({
        jsonrpc: '2.0',
        id: 3,
        error: { code: -32602, message: expect.stringContaining(`Invalid params: ${where}: `) },
      });
    }
    // No body at all, with or without a content type, is answered at once: the SDK alone would wait for one.
    for (const raw of [{ body: '', contentType: 'application/json' }, undefined]) {
      const empty = await call(api.url, 'POST', '/mcp', { raw, token: ROOT_KEY, headers: MCP_HEADERS });
      expect(empty.status, JSON.stringify(raw)).toBe(400);
      expect(empty.body, JSON.stringify(raw)).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: expect.stringMatching(/^Parse error: the request has no body/) },
      });
    }
    // A client that does not accept both answers hears that first (406), as the SDK orders its checks.
    const unacceptable = await call(api.url, 'POST', '/mcp', { json: { jsonrpc: '2.0', id: 5, method: 'tools/call' }, token: ROOT_KEY });
    expect(unacceptable.status).toBe(406);
    // A method this server does not answer stays the SDK's Method not found, and a good request is served.
    const unknown = await post({ jsonrpc: '2.0', id: 4, method: 'prompts/get', params: { name: 5 } });
    const answered = JSON.parse(/^data: (.*)$/m.exec(unknown.text)?.[1] ?? unknown.text) as { id: number; error: { code: number } };
    expect(answered).toMatchObject({ id: 4, error: { code: -32601 } });
    expect((await post(INITIALIZE_REQUEST)).status).toBe(200);
  });
});

describe('MCP on, jwt mode', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), JWT_SECRET, MCP_ENABLED: 'true' });
  });
  afterAll(() => api?.stop());

  it('answers 401 with WWW-Authenticate without a token, and the SDK client fails to connect', async () => {
    const response = await call(api.url, 'POST', '/mcp', { json: INITIALIZE_REQUEST, headers: MCP_HEADERS });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ detail: 'Authorization header missing' });
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    await expect(connectMcp(api.url)).rejects.toMatchObject({ code: 401 });
  });

  it('accepts the same JWT as REST and applies its scopes', async () => {
    const client = await connectMcp(api.url, await signJwt({ sub: 'alice', scopes: ['config:read'] }));
    try {
      expect((await callTool(client, 'get_config')).structured).toMatchObject({ principal: 'alice', auth_mode: 'jwt' });
      expect((await callTool(client, 'list_service_accounts')).isError).toBe(true);
    } finally {
      await client.close();
    }
  });
});

describe('MCP as an OAuth-protected resource', () => {
  let api: RunningApi;
  let authServer: AuthorizationServer;
  let resource: string;
  let databaseUrl: string;
  beforeAll(async () => {
    authServer = await new AuthorizationServer().start();
    databaseUrl = await createTestDatabase();
    api = await startApi({
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      MCP_ENABLED: 'true',
      MCP_OAUTH_ISSUER: authServer.issuer,
      MCP_OAUTH_JWKS_URL: authServer.jwksUrl,
    });
    resource = `${api.url}/mcp`;
  });
  afterAll(async () => {
    await api?.stop();
    await authServer?.stop();
  });

  it('reports mcp.oauth on /info', async () => {
    const info = await call(api.url, 'GET', '/info');
    expect(info.body.mcp).toEqual({ enabled: true, path: '/mcp', oauth: { authorization_servers: [authServer.issuer], resource } });
    expect(info.body.auth_mode).toBe('security_key');
    expect((await call(api.url, 'GET', '/config', { token: ROOT_KEY })).body.mcp).toEqual(info.body.mcp);
  });

  it('challenges an anonymous request with the resource metadata, which names the authorization server', async () => {
    const response = await call(api.url, 'POST', '/mcp', { json: INITIALIZE_REQUEST, headers: MCP_HEADERS });
    expect(response.status).toBe(401);
    const challenge = response.headers.get('www-authenticate')!;
    expect(challenge).toBe(`Bearer resource_metadata="${api.url}/.well-known/oauth-protected-resource/mcp"`);
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1];
    const metadata = await fetch(metadataUrl);
    expect(metadata.status).toBe(200);
    const body = await metadata.json();
    expect(body).toMatchObject({ resource, authorization_servers: [authServer.issuer], bearer_methods_supported: ['header'] });
    expect((await call(api.url, 'GET', '/.well-known/oauth-protected-resource')).body).toEqual(body);
  });

  it('accepts access tokens from that issuer for this resource and enforces their scopes', async () => {
    const token = await authServer.accessToken({ sub: 'dana@example.com', audience: resource, scope: 'config:read agents:run' });
    const client = await connectMcp(api.url, token);
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      expect((await callTool(client, 'get_config')).structured).toMatchObject({
        principal: 'dana@example.com',
        scopes: ['config:read', 'agents:run'],
      });
      expect((await callTool(client, 'list_service_accounts')).text).toBe(
        '403: Insufficient permissions. Required scope(s): service_accounts:read',
      );
    } finally {
      await client.close();
    }
  });

  it('rejects tokens for another audience, from another issuer, expired, or claiming an sa: subject', async () => {
    const tokens = [
      await authServer.accessToken({ sub: 'dana', audience: 'https://elsewhere.example/api', scope: 'config:read' }),
      await authServer.accessToken({ sub: 'dana', audience: resource, issuer: 'https://impostor.example', scope: 'config:read' }),
      await authServer.accessToken({ sub: 'dana', audience: resource, scope: 'config:read', expiresIn: '-1m' }),
      await authServer.accessToken({ sub: 'sa:ci', audience: resource, scope: 'config:read' }),
    ];
    for (const token of tokens) {
      const response = await call(api.url, 'POST', '/mcp', { json: INITIALIZE_REQUEST, headers: MCP_HEADERS, token });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(
        `Bearer error="invalid_token", resource_metadata="${api.url}/.well-known/oauth-protected-resource/mcp"`,
      );
    }
  });

  it("fires a schedule an OAuth caller created, with that caller's rights", async () => {
    const token = await authServer.accessToken({ sub: 'dana@example.com', audience: resource, scope: 'schedules:write config:read' });
    const client = await connectMcp(api.url, token);
    let scheduleId: string;
    try {
      const created = await callTool(client, 'create_schedule', {
        name: 'dana-config',
        cron_expr: '0 0 1 1 *',
        endpoint: '/config',
        method: 'GET',
      });
      expect(created.structured).toMatchObject({ user_id: 'dana@example.com' });
      scheduleId = created.structured.id;
    } finally {
      await client.close();
    }
    const worker = await startWorker({
      DATABASE_URL: databaseUrl,
      PUBLIC_URL: api.url,
      SCHEDULE_TICK_INTERVAL_MS: '200',
      OS_SECURITY_KEY: ROOT_KEY,
    });
    try {
      expect((await call(api.url, 'POST', `/schedules/${scheduleId}/trigger`, { token: ROOT_KEY })).status).toBe(202);
      let fire: { status: string; status_code: number | null; error: string | null } | undefined;
      await waitFor(
        async () =>
          ['success', 'failed'].includes(
            (fire = (await call(api.url, 'GET', `/schedules/${scheduleId}/runs`, { token: ROOT_KEY })).body.data[0])?.status ?? '',
          ),
        20_000,
        'the fire to finish',
      );
      expect(fire).toMatchObject({ status: 'success', status_code: 200, error: null });
    } finally {
      await worker.stop();
    }
  });

  it('keeps service-account tokens working alongside OAuth, and leaves REST untouched by OAuth tokens', async () => {
    const account = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read'] });
    const client = await connectMcp(api.url, account.token);
    try {
      expect((await callTool(client, 'get_config')).structured.principal).toBe(`sa:${account.name}`);
    } finally {
      await client.close();
    }
    const token = await authServer.accessToken({ sub: 'dana', audience: resource, scope: 'config:read' });
    expect((await call(api.url, 'GET', '/config', { token })).status).toBe(401);
  });
});

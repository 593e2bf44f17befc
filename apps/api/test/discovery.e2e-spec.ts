import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { RunningApi, startApi } from '../../../test/support/processes';

describe('discovery', () => {
  let api: RunningApi;

  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: 'root-key-for-tests-0001' });
  });
  afterAll(() => api?.stop());

  it('answers /health without a credential', async () => {
    const response = await call(api.url, 'GET', '/health');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok', instantiated_at: expect.any(Number) });
  });

  it('reports the auth mode, the MCP mount, A2A and the WebSocket on /info', async () => {
    const response = await call(api.url, 'GET', '/info');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      auth_mode: 'security_key',
      mcp: { enabled: false, path: null, oauth: null },
      a2a: {
        path: '/a2a',
        agent_card: '/a2a/{agents|teams|workflows}/{id}/.well-known/agent-card.json',
        bindings: ['JSONRPC', 'HTTP+JSON'],
      },
      websocket: { path: '/ws', actions: ['authenticate', 'run', 'watch', 'cancel'] },
    });
  });
});

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { callTool, connectMcp } from '../../../test/support/mcp';
import { mintAccount, MintedAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';

const INSPECTOR = 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js';

/** Real MCP clients other than the SDK, against a live api: the stdio bridge and the inspector CLI. */
describe('MCP through third-party clients', () => {
  let api: RunningApi;
  let account: MintedAccount;
  let home: string;
  let toolNames: string[];
  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'true' });
    account = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read'] });
    // Private HOME: the clients keep state there (mcp-remote's ~/.mcp-auth, the inspector catalog).
    home = mkdtempSync(join(tmpdir(), 'mcp-clients-'));
    const client = await connectMcp(api.url, account.token);
    toolNames = (await client.listTools()).tools.map((tool) => tool.name).sort();
    await client.close();
  });
  afterAll(async () => {
    await api?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('completes tools/list through mcp-remote launched like the desktop-app-a entry, token only in its env', async () => {
    // The entry shape `svc connect` writes for desktop-app-a: npx runs the bridge; argv names the env entry, never the token.
    const entry = {
      command: 'npx',
      args: ['-y', 'mcp-remote', `${api.url}/mcp`, '--header', 'Authorization:${SVC_AUTH_HEADER}'],
      env: { SVC_AUTH_HEADER: `Bearer ${account.token}` },
    };
    const transport = new StdioClientTransport({
      ...entry,
      env: { PATH: process.env.PATH ?? '', HOME: home, MCP_REMOTE_CONFIG_DIR: join(home, '.mcp-auth'), ...entry.env },
      cwd: process.cwd(),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: 'bridge-test', version: '1.0.0' });
    try {
      await client.connect(transport);
      expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(toolNames);
      expect((await callTool(client, 'get_config')).structured.principal).toBe(`sa:${account.name}`);
    } catch (error) {
      throw new Error(`${String(error)}\nmcp-remote stderr:\n${stderr}`, { cause: error });
    } finally {
      await client.close();
    }
    expect(stderr).not.toContain(account.token);
  }, 60_000);

  it('lists the tools with the MCP Inspector CLI', async () => {
    // A config file (owner-only) carries the header, so the token stays out of the inspector's argv.
    const config = join(home, 'inspector-mcp.json');
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: { platform: { type: 'streamable-http', url: `${api.url}/mcp`, headers: { Authorization: `Bearer ${account.token}` } } },
      }),
      { mode: 0o600 },
    );
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [INSPECTOR, '--cli', '--config', config, '--server', 'platform', '--method', 'tools/list', '--format', 'json', '--quiet'],
      {
        env: { PATH: process.env.PATH ?? '', HOME: home },
        timeout: 45_000,
      },
    );
    const listed = JSON.parse(stdout) as { result: { tools: { name: string }[] } };
    expect(listed.result.tools.map((tool) => tool.name).sort()).toEqual(toolNames);
  }, 60_000);
});

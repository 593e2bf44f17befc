import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { parse as parseToml } from 'smol-toml';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { CliSandbox, cliSandbox, defaultPortsInUse, LiveService, runCli, startService } from '../../../test/support/cli';
import { runCommand } from '../../../test/support/cli-in-process';
import { query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY } from '../../../test/support/principals';

const OTHER_MCP = 'https://other.example.com/mcp';

interface Configs {
  claude: string;
  project: string;
  desktop: string;
  codex: string;
  cursor: string;
}

/** Each client's real config file, holding an entry for the target, one for another server, and unrelated settings. */
/** The error a client's result names for a config file that does not parse. */
const notValidJson = (path: string) =>
  expect.stringMatching(new RegExp(`^Refusing to modify ${path}: the existing file is not valid JSON`));

/** The configs below, with the target's entries of code-agent-a, code-agent-b and editor-c holding these tokens. */
function writeConfigsHolding(
  sandbox: CliSandbox,
  targetMcp: string,
  tokens: { claude?: string; codex?: string; cursor?: string },
): Configs {
  const files = writeConfigs(sandbox, targetMcp);
  const hold = (path: string, token: string | undefined) =>
    token && writeFileSync(path, readFileSync(path, 'utf8').replaceAll('svc_pat_old', token));
  hold(files.claude, tokens.claude);
  hold(files.codex, tokens.codex);
  if (tokens.cursor) {
    writeFileSync(
      files.cursor,
      JSON.stringify({ mcpServers: { 'platform-service': { url: targetMcp, headers: { Authorization: `Bearer ${tokens.cursor}` } } } }),
    );
  }
  return files;
}

function writeConfigs(sandbox: CliSandbox, targetMcp: string): Configs {
  const files: Configs = {
    claude: join(sandbox.home, '.claude.json'),
    project: join(sandbox.cwd, '.mcp.json'),
    desktop: join(sandbox.home, '.config', 'Claude', 'claude_desktop_config.json'),
    codex: join(sandbox.home, '.codex', 'config.toml'),
    cursor: join(sandbox.home, '.cursor', 'mcp.json'),
  };
  for (const path of Object.values(files)) {
    mkdirSync(join(path, '..'), { recursive: true });
  }
  writeFileSync(
    files.claude,
    JSON.stringify({
      numStartups: 7,
      theme: 'dark',
      mcpServers: {
        'platform-service': { type: 'http', url: targetMcp, headers: { Authorization: 'Bearer svc_pat_old' } },
        other: { type: 'http', url: OTHER_MCP },
      },
      projects: { [sandbox.cwd]: { allowedTools: ['x'], mcpServers: { 'local-copy': { type: 'http', url: targetMcp } } } },
    }),
  );
  chmodSync(files.claude, 0o600);
  writeFileSync(
    files.project,
    JSON.stringify({ mcpServers: { 'team-server': { type: 'http', url: targetMcp }, other: { type: 'http', url: OTHER_MCP } } }),
  );
  writeFileSync(
    files.desktop,
    JSON.stringify({
      globalShortcut: 'Ctrl+Space',
      mcpServers: {
        'platform-service': {
          command: 'npx',
          args: ['-y', 'mcp-remote', targetMcp, '--header', 'Authorization:${SVC_AUTH_HEADER}'],
          env: { SVC_AUTH_HEADER: 'Bearer svc_pat_old' },
        },
        files: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'] },
      },
    }),
  );
  writeFileSync(
    files.codex,
    [
      '# my codex settings',
      'model = "gpt-5"',
      '',
      '[mcp_servers.other]',
      `url = "${OTHER_MCP}"`,
      '',
      '# the platform service',
      '[mcp_servers.platform-service]',
      `url = "${targetMcp}"`,
      'http_headers = { "Authorization" = "Bearer svc_pat_old" }',
      '',
      '[profiles.fast]',
      'model = "gpt-5-mini"',
      '',
    ].join('\n'),
  );
  writeFileSync(files.cursor, JSON.stringify({ mcpServers: { 'platform-service': { url: targetMcp }, other: { url: OTHER_MCP } } }));
  return files;
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe('svc disconnect and status (offline entry removal, other entries untouched)', () => {
  let service: LiveService;
  let sandbox: CliSandbox;
  let targetMcp: string;
  const asAdmin = () => ({ OS_SECURITY_KEY: ROOT_KEY });
  /** `svc disconnect --url <service> ...args --json` with the security key. */
  const disconnectAsAdmin = (...args: string[]) =>
    runCommand(['disconnect', '--url', service.api.url, ...args, '--json'], sandbox, { env: asAdmin() });
  const accountRow = async (id: string) =>
    (
      await query<{ revoked_at: Date | null; last_used_at: Date | null }>(
        service.databaseUrl,
        'SELECT revoked_at, last_used_at FROM service_accounts WHERE id = $1',
        [id],
      )
    )[0];

  beforeAll(async () => {
    // No verification cache: a test narrows an account's scopes in the database and expects the api to see it.
    service = await startService({ OS_SECURITY_KEY: ROOT_KEY, SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '0' });
    targetMcp = `${service.api.url}/mcp`;
  });
  afterAll(() => service?.stop());
  beforeEach(() => {
    sandbox = cliSandbox();
  });

  it('status reports each client as detected and configured from its real config file', async () => {
    const files = writeConfigs(sandbox, targetMcp);
    const run = await runCommand(['status', '--url', service.api.url, '--json'], sandbox);
    expect(run.code).toBe(0);
    expect(run.json().clients).toEqual([
      { client: 'code-agent-a', detected: true, configured: true, location: files.claude },
      { client: 'desktop-app-a', detected: true, configured: true, location: files.desktop },
      { client: 'code-agent-b', detected: true, configured: true, location: files.codex },
      { client: 'editor-c', detected: true, configured: true, location: files.cursor },
    ]);
    // The text says the entries were read, not tried (a revoked token still reads as configured).
    const text = await runCommand(['status', '--url', service.api.url], sandbox, { env: { NO_COLOR: '1' } });
    expect(text.stdout).toContain(`configured in ${files.cursor}`);
    expect(text.stderr).toContain('Entries are read from the config files, not tried: svc connect verifies each over MCP');
    const other = await runCommand(['status', '--url', service.api.url, '--server-name', 'other', '--json'], sandbox);
    // "other" exists but points at another server: not configured for this one.
    expect(other.json().clients.every((client: { configured: boolean }) => !client.configured)).toBe(true);
    const empty = await runCommand(['status', '--url', service.api.url, '--json'], cliSandbox());
    expect(empty.json().clients.every((client: { detected: boolean; configured: boolean }) => !client.detected && !client.configured)).toBe(
      true,
    );
  });

  it('removes every entry pointing at the target, in every scope, and nothing else', async () => {
    const files = writeConfigs(sandbox, targetMcp);
    const run = await runCommand(['disconnect', '--url', service.api.url, '--json'], sandbox);
    expect(run.code).toBe(0);
    const document = run.json();
    expect(Object.keys(document).sort()).toEqual(['exit_code', 'os', 'results', 'revocations', 'server_name', 'target_urls']);
    expect(document).toMatchObject({ server_name: null, target_urls: [service.api.url], revocations: [], exit_code: 0 });
    expect(document.os.url).toBe(service.api.url);
    expect(document.results).toEqual([
      {
        client: 'code-agent-a',
        status: 'removed',
        error: null,
        removed: ['local-copy', 'team-server', 'platform-service'],
        location: `${files.claude}, ${files.project}`,
      },
      { client: 'desktop-app-a', status: 'removed', error: null, removed: ['platform-service'], location: files.desktop },
      { client: 'code-agent-b', status: 'removed', error: null, removed: ['platform-service'], location: files.codex },
      { client: 'editor-c', status: 'removed', error: null, removed: ['platform-service'], location: files.cursor },
    ]);

    const claude = readJson(files.claude);
    expect(claude).toEqual({
      numStartups: 7,
      theme: 'dark',
      mcpServers: { other: { type: 'http', url: OTHER_MCP } },
      projects: { [sandbox.cwd]: { allowedTools: ['x'], mcpServers: {} } },
    });
    expect(statSync(files.claude).mode & 0o777).toBe(0o600);
    expect(readJson(files.project)).toEqual({ mcpServers: { other: { type: 'http', url: OTHER_MCP } } });
    expect(readJson(files.desktop)).toEqual({
      globalShortcut: 'Ctrl+Space',
      mcpServers: { files: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'] } },
    });
    expect(readJson(files.cursor)).toEqual({ mcpServers: { other: { url: OTHER_MCP } } });
    const codexText = readFileSync(files.codex, 'utf8');
    expect(parseToml(codexText)).toEqual({
      model: 'gpt-5',
      mcp_servers: { other: { url: OTHER_MCP } },
      profiles: { fast: { model: 'gpt-5-mini' } },
    });
    expect(codexText).toContain('# my codex settings');

    const again = await runCommand(['disconnect', '--url', service.api.url, '--json'], sandbox);
    expect(again.code).toBe(0);
    expect(again.json().results.map((result: { status: string }) => result.status)).toEqual([
      'not-found',
      'not-found',
      'not-found',
      'not-found',
    ]);
  });

  it("keeps a same-named entry of code-agent-a's other scope that points at another server", async () => {
    const claude = join(sandbox.home, '.claude.json');
    writeFileSync(
      claude,
      JSON.stringify({
        mcpServers: { 'platform-service': { type: 'http', url: OTHER_MCP } },
        projects: { [sandbox.cwd]: { mcpServers: { 'platform-service': { type: 'http', url: targetMcp } } } },
      }),
    );
    const run = await runCommand(['disconnect', '--url', service.api.url, '--clients', 'code-agent-a', '--json'], sandbox);
    expect(run.code).toBe(0);
    expect(run.json().results).toEqual([
      { client: 'code-agent-a', status: 'removed', error: null, removed: ['platform-service'], location: claude },
    ]);
    expect(readJson(claude)).toEqual({
      mcpServers: { 'platform-service': { type: 'http', url: OTHER_MCP } },
      projects: { [sandbox.cwd]: { mcpServers: {} } },
    });
    // And the other way round: the user entry is the target's, the local one another server's.
    writeFileSync(
      claude,
      JSON.stringify({
        mcpServers: { 'platform-service': { type: 'http', url: targetMcp } },
        projects: { [sandbox.cwd]: { mcpServers: { 'platform-service': { type: 'http', url: OTHER_MCP } } } },
      }),
    );
    expect((await runCommand(['disconnect', '--url', service.api.url, '--clients', 'code-agent-a', '--json'], sandbox)).code).toBe(0);
    expect(readJson(claude)).toEqual({
      mcpServers: {},
      projects: { [sandbox.cwd]: { mcpServers: { 'platform-service': { type: 'http', url: OTHER_MCP } } } },
    });
  });

  it('--server-name removes exactly that entry, whatever it points at', async () => {
    const files = writeConfigs(sandbox, targetMcp);
    const run = await runCommand(['disconnect', '--server-name', 'other', '--clients', 'code-agent-b,cursor', '--json'], sandbox);
    expect(run.code).toBe(0);
    expect(run.json()).toMatchObject({ os: null, server_name: 'other', target_urls: [] });
    expect(run.json().results.map((result: { client: string; removed: string[] }) => [result.client, result.removed])).toEqual([
      ['code-agent-b', ['other']],
      ['editor-c', ['other']],
    ]);
    expect(parseToml(readFileSync(files.codex, 'utf8')).mcp_servers).toEqual({
      'platform-service': { url: targetMcp, http_headers: { Authorization: 'Bearer svc_pat_old' } },
    });
    expect(readJson(files.cursor).mcpServers).toEqual({ 'platform-service': { url: targetMcp } });
    // Not selected: untouched.
    expect(readJson(files.claude).mcpServers.other).toEqual({ type: 'http', url: OTHER_MCP });
  });

  it('offline, targets every URL discovery would have tried', async () => {
    const dead = 'http://127.0.0.1:2'; // never served: connections refused
    writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${dead}\n`);
    const files = writeConfigs(sandbox, `${dead}/mcp`);
    const run = await runCommand(['disconnect', '--clients', 'editor-c', '--json'], sandbox);
    expect(run.code).toBe(0);
    expect(run.json()).toMatchObject({
      os: null,
      target_urls: [dead, 'http://localhost:7777', 'http://localhost:7778', 'http://localhost:7779', 'http://localhost:8000'],
      results: [{ client: 'editor-c', status: 'removed', removed: ['platform-service'] }],
    });
    expect(readJson(files.cursor).mcpServers).toEqual({ other: { url: OTHER_MCP } });
  });

  it("offline, an entry at a default port goes only if it holds a service-account token: another server's is kept, and named", async (context) => {
    const inUse = await defaultPortsInUse();
    context.skip(inUse.length > 0, `a default port is in use (${inUse.join(', ')})`);
    const cursor = join(sandbox.home, '.cursor', 'mcp.json');
    mkdirSync(join(cursor, '..'), { recursive: true });
    // Another server on port 8000, keyed its own way; and the service's entry on 7777, as connect writes it.
    const theirs = {
      tools: { url: 'http://localhost:8000/mcp', headers: { 'X-API-Key': 'their-own-api-key' } },
      'bearer-tools': { url: 'http://localhost:8000/mcp', headers: { Authorization: 'Bearer their-own-token' } },
    };
    const ours = { url: 'http://localhost:7777/mcp', headers: { Authorization: 'Bearer svc_pat_AbCdEfGhIjKlMnOpQrStUv' } };
    const write = () => writeFileSync(cursor, JSON.stringify({ mcpServers: { ...theirs, 'platform-service': ours } }));
    write();
    const run = await runCommand(['disconnect', '--clients', 'editor-c', '--json'], sandbox);
    expect(run.code).toBe(0);
    expect(run.json().results).toEqual([
      {
        client: 'editor-c',
        status: 'removed',
        error: null,
        removed: ['platform-service'],
        location: cursor,
        note: 'Kept tools (http://localhost:8000/mcp), bearer-tools (http://localhost:8000/mcp): nothing there answered as this service and no service-account token shows they are its; --url http://localhost:8000 removes them.',
      },
    ]);
    expect(readJson(cursor).mcpServers).toEqual(theirs);

    // At a terminal: what was kept, and the removed token's listed prefix to find its account by (a later --revoke
    // would find no entry left to read the token from).
    write();
    const human = await runCommand(['disconnect', '--clients', 'editor-c'], sandbox);
    expect(human.code).toBe(0);
    expect(human.stderr).toContain(
      'removing entries at http://localhost:7777, http://localhost:7778, http://localhost:7779, http://localhost:8000 that hold a service-account token',
    );
    expect(human.stdout).toContain(
      '    Kept tools (http://localhost:8000/mcp), bearer-tools (http://localhost:8000/mcp): nothing there answered',
    );
    expect(human.stderr).toContain("The removed entries' tokens (svc_pat_AbCdEfG…) stay valid until their accounts are revoked");
    expect(human.stderr).not.toContain('svc_pat_AbCdEfGh');
    // --url names the service: what points there goes, whoever's it is.
    const named = await runCommand(['disconnect', '--clients', 'editor-c', '--url', 'http://localhost:8000'], sandbox);
    expect(named.code).toBe(0);
    expect(named.stderr).toContain('No running service answered; removing entries that point at http://localhost:8000.\n');
    expect(readJson(cursor).mcpServers).toEqual({});
  });

  it('refuses to write through a symlinked config; a partial result exits 3, a total failure 1', async () => {
    const files = writeConfigs(sandbox, targetMcp);
    const real = join(sandbox.home, 'elsewhere.json');
    writeFileSync(real, readFileSync(files.cursor));
    const { rmSync } = await import('node:fs');
    rmSync(files.cursor);
    symlinkSync(real, files.cursor);
    const partial = await runCommand(['disconnect', '--url', service.api.url, '--clients', 'cursor,codex', '--json'], sandbox);
    expect(partial.code).toBe(3);
    const [editor, codex] = partial.json().results;
    expect(editor).toMatchObject({
      client: 'editor-c',
      status: 'failed',
      error: `Refusing to write ${files.cursor}: it is a symbolic link.`,
    });
    expect(codex).toMatchObject({ client: 'code-agent-b', status: 'removed' });
    expect(partial.json().exit_code).toBe(3);
    expect(readJson(real).mcpServers['platform-service']).toEqual({ url: targetMcp });

    const total = await runCommand(['disconnect', '--url', service.api.url, '--clients', 'cursor', '--json'], sandbox);
    expect(total.code).toBe(1);
    expect(total.json().exit_code).toBe(1);
  });

  it('an unparseable client config: status reads it as holding no entry, disconnect reports it failed (it cannot tell), both go on with the other clients and never rewrite it', async () => {
    const files = writeConfigs(sandbox, targetMcp);
    writeFileSync(files.desktop, '{ not json');
    const status = await runCommand(['status', '--url', service.api.url, '--json'], sandbox);
    expect(status.code, status.stderr).toBe(0);
    // Installed (its config directory is there) but holding no usable entry; the other clients are read as before.
    expect(status.json().clients).toEqual([
      { client: 'code-agent-a', detected: true, configured: true, location: files.claude },
      { client: 'desktop-app-a', detected: true, configured: false, location: null },
      { client: 'code-agent-b', detected: true, configured: true, location: files.codex },
      { client: 'editor-c', detected: true, configured: true, location: files.cursor },
    ]);
    const run = await runCommand(['disconnect', '--url', service.api.url, '--clients', 'desktop-app-a,editor-c', '--json'], sandbox);
    // Whether the unreadable file holds the entry is unknown, so it is not "not-found": a partial result, exit 3.
    expect(run.code, run.stderr).toBe(3);
    expect(run.json().results).toEqual([
      {
        client: 'desktop-app-a',
        status: 'failed',
        error: notValidJson(files.desktop),
        removed: [],
        location: null,
      },
      { client: 'editor-c', status: 'removed', error: null, removed: ['platform-service'], location: files.cursor },
    ]);
    expect(readJson(files.cursor).mcpServers).toEqual({ other: { url: OTHER_MCP } });
    // Neither command rewrote (or "repaired") the unparseable file.
    expect(readFileSync(files.desktop, 'utf8')).toBe('{ not json');

    // One broken file of a client does not keep its entry in another file: removed there, the broken one named.
    writeFileSync(files.project, '{ "mcpServers": { "x": 1, } }');
    const partly = await runCommand(['disconnect', '--url', service.api.url, '--clients', 'code-agent-a', '--json'], sandbox);
    expect(partly.code, partly.stderr).toBe(0);
    expect(partly.json().results).toEqual([
      {
        client: 'code-agent-a',
        status: 'removed',
        error: notValidJson(files.project),
        removed: ['local-copy', 'platform-service'],
        location: files.claude,
      },
    ]);
    expect(readFileSync(files.project, 'utf8')).toBe('{ "mcpServers": { "x": 1, } }');
  });

  it('chat apps get manual removal steps; unknown clients are a usage error (exit 2, stderr, no JSON)', async () => {
    const run = await runCli(['disconnect', '--url', service.api.url, '--clients', 'chat-app-a,claude.ai', '--json'], sandbox);
    expect(run.code).toBe(0);
    expect(run.json().results).toEqual([
      {
        client: 'chat-app-a',
        status: 'manual',
        error: null,
        removed: [],
        location: null,
        instructions: ['Remove the connector in the ChatGPT UI: Settings -> Connectors.'],
      },
      {
        client: 'chat-app-b',
        status: 'manual',
        error: null,
        removed: [],
        location: null,
        instructions: ['Remove the connector in the Claude UI: Settings -> Connectors.'],
      },
    ]);
    const unknown = await runCli(['disconnect', '--clients', 'notepad', '--json'], sandbox);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain('Unknown client: notepad. Supported: ');
    // A name every object has is no client either.
    const inherited = await runCli(['disconnect', '--clients', 'constructor', '--json'], sandbox);
    expect(inherited.code).toBe(2);
    expect(inherited.stderr).toContain('Unknown client: constructor. Supported: ');
  });

  it('--revoke revokes the accounts whose tokens the removed entries hold, with the admin credential', async () => {
    const codeAgent = await mintAccount(service.api.url, ROOT_KEY, { name: 'code-agent-a' });
    const shared = await mintAccount(service.api.url, ROOT_KEY, { name: 'shared-laptop' });
    writeConfigsHolding(sandbox, targetMcp, { claude: codeAgent.token, codex: shared.token });
    const run = await disconnectAsAdmin('--clients', 'code-agent-a,editor-c', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(0);
    // editor-c's entry holds no token: there is no account of its to revoke.
    expect(run.json().revocations).toEqual([
      { account: 'code-agent-a', status: 'revoked', error: null },
      { account: 'editor-c', status: 'not-found', error: null },
    ]);
    expect((await call(service.api.url, 'GET', '/config', { token: codeAgent.token })).status).toBe(401);

    const named = await disconnectAsAdmin('--clients', 'code-agent-b', '--revoke', '--name', 'shared-laptop');
    expect(named.code, named.stdout + named.stderr).toBe(0);
    expect(named.json().revocations).toEqual([{ account: 'shared-laptop', status: 'revoked', error: null }]);
    expect((await call(service.api.url, 'GET', '/config', { token: shared.token })).status).toBe(401);
  });

  it("a --revoke after a plain disconnect finds no token left: it says the client's account is still active, and how to revoke it", async () => {
    await query(service.databaseUrl, "UPDATE service_accounts SET revoked_at = now() WHERE name = 'code-agent-b' AND revoked_at IS NULL");
    const account = await mintAccount(service.api.url, ROOT_KEY, { name: 'code-agent-b' });
    writeConfigsHolding(sandbox, targetMcp, { codex: account.token });
    const plain = await runCommand(['disconnect', '--url', service.api.url, '--clients', 'code-agent-b'], sandbox);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toContain(
      `The removed entries' tokens (${account.token.slice(0, 15)}…) stay valid until their accounts are revoked`,
    );
    const later = await disconnectAsAdmin('--clients', 'code-agent-b', '--revoke');
    expect(later.code, later.stdout + later.stderr).toBe(0);
    expect(later.json().revocations).toEqual([
      {
        account: 'code-agent-b',
        status: 'not-found',
        error:
          'still active: no entry removed holds its token; svc tokens revoke code-agent-b revokes it by name (any client still using it stops working)',
      },
    ]);
    expect((await call(service.api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
  });

  it("--revoke leaves another machine's account of the client's name alone, and revokes the one the entry holds", async () => {
    const elsewhere = await mintAccount(service.api.url, ROOT_KEY, { name: 'editor-c' });
    // Without config:read: the service will not say whose it is, so its listed prefix tells, once the token works.
    const mine = await mintAccount(service.api.url, ROOT_KEY, { scopes: ['agents:run'] });
    const files = writeConfigsHolding(sandbox, targetMcp, { cursor: mine.token });
    const run = await disconnectAsAdmin('--clients', 'editor-c', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.json().revocations).toEqual([{ account: mine.name, status: 'revoked', error: null }]);
    expect(readJson(files.cursor).mcpServers['platform-service']).toBeUndefined();
    // 401, where a working token without config:read is a 403.
    expect((await call(service.api.url, 'GET', '/config', { token: mine.token })).status).toBe(401);
    expect((await call(service.api.url, 'GET', '/config', { token: elsewhere.token })).status).toBe(200);
    // The name is free again for the tests after this one.
    expect((await call(service.api.url, 'DELETE', `/service-accounts/${elsewhere.id}`, { token: ROOT_KEY })).status).toBe(200);
  });

  it('--revoke keeps an account another client on this machine still holds: that entry goes, the token keeps working (exit 3)', async () => {
    const shared = await mintAccount(service.api.url, ROOT_KEY, { name: 'shared-desk' });
    const files = writeConfigsHolding(sandbox, targetMcp, { codex: shared.token, cursor: shared.token });
    const run = await disconnectAsAdmin('--clients', 'code-agent-b', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.json().revocations).toEqual([
      {
        account: 'shared-desk',
        status: 'failed',
        error: `editor-c's entry 'platform-service' in ${files.cursor} still holds its token: disconnect that client too, or svc tokens revoke shared-desk`,
      },
    ]);
    expect(run.json().results).toEqual([expect.objectContaining({ client: 'code-agent-b', status: 'removed' })]);
    expect(parseToml(readFileSync(files.codex, 'utf8')).mcp_servers).not.toHaveProperty('platform-service');
    expect((await call(service.api.url, 'GET', '/config', { token: shared.token })).status).toBe(200);

    const both = await disconnectAsAdmin('--clients', 'editor-c', '--revoke');
    expect(both.code, both.stdout + both.stderr).toBe(0);
    expect(both.json().revocations).toEqual([{ account: 'shared-desk', status: 'revoked', error: null }]);
    expect((await call(service.api.url, 'GET', '/config', { token: shared.token })).status).toBe(401);
  });

  it("--revoke --name revokes only that account: an entry holding another's goes, and its result says that token still works", async () => {
    const other = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigsHolding(sandbox, targetMcp, { cursor: other.token });
    const run = await disconnectAsAdmin('--clients', 'editor-c', '--revoke', '--name', 'not-this-one');
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.json().revocations).toEqual([
      { account: 'not-this-one', status: 'not-found', error: expect.stringContaining('no entry removed holds its token') },
    ]);
    expect(run.json().results).toEqual([
      expect.objectContaining({
        client: 'editor-c',
        status: 'removed',
        error: `Its token, account ${other.name}'s, still works (svc tokens revoke ${other.name}).`,
      }),
    ]);
    expect(readJson(files.cursor).mcpServers['platform-service']).toBeUndefined();
    expect((await call(service.api.url, 'GET', '/config', { token: other.token })).status).toBe(200);
  });

  it('--revoke never sends a token no account lists (made-up, or replaced by a rotation) and revokes the one that is', async () => {
    const rotated = await mintAccount(service.api.url, ROOT_KEY, { scopes: ['agents:run'] });
    expect((await call(service.api.url, 'POST', `/service-accounts/${rotated.id}/rotate`, { token: ROOT_KEY, json: {} })).status).toBe(200);
    const current = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigsHolding(sandbox, targetMcp, { claude: rotated.token, cursor: current.token });
    // More made-up tokens than the service's failed-lookup limit allows a minute: sent, they would throttle this address.
    const madeUp = Object.fromEntries(
      Array.from({ length: 25 }, (_, index) => [
        `stale-${index}`,
        { type: 'http', url: targetMcp, headers: { Authorization: `Bearer svc_pat_${String(index).padStart(43, 'Z')}` } },
      ]),
    );
    writeFileSync(files.project, JSON.stringify({ mcpServers: madeUp }));
    const run = await disconnectAsAdmin('--clients', 'code-agent-a,editor-c', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.json().revocations).toEqual([
      { account: 'code-agent-a', status: 'not-found', error: null },
      { account: current.name, status: 'revoked', error: null },
    ]);
    expect(readJson(files.project).mcpServers).toEqual({});
    expect((await call(service.api.url, 'GET', '/config', { token: current.token })).status).toBe(401);
    // The old token is in its grace: the account it was replaced in is not revoked.
    expect((await call(service.api.url, 'GET', '/config', { token: rotated.token })).status).toBe(403);
    expect((await call(service.api.url, 'GET', '/config', { token: 'svc_pat_never-minted' })).status).toBe(401);
  });

  it("--revoke goes on past another client's config it cannot read: that client holds no token here", async () => {
    const account = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigsHolding(sandbox, targetMcp, { cursor: account.token });
    rmSync(files.codex);
    mkdirSync(files.codex);
    const run = await disconnectAsAdmin('--clients', 'editor-c', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.json().revocations).toEqual([{ account: account.name, status: 'revoked', error: null }]);
    expect((await call(service.api.url, 'GET', '/config', { token: account.token })).status).toBe(401);
  });

  it("--revoke with --server-name never sends an entry's token to a service it is not for", async () => {
    const account = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigs(sandbox, targetMcp);
    writeFileSync(
      files.cursor,
      JSON.stringify({ mcpServers: { other: { url: OTHER_MCP, headers: { Authorization: `Bearer ${account.token}` } } } }),
    );
    const run = await disconnectAsAdmin('--clients', 'editor-c', '--server-name', 'other', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(0);
    // No account row: the result says the token was not revoked.
    expect(run.json().revocations).toEqual([]);
    expect(run.json().results).toEqual([
      expect.objectContaining({ status: 'removed', error: `Its token was not revoked: the entry points at ${OTHER_MCP}.` }),
    ]);
    expect(readJson(files.cursor).mcpServers).toEqual({});
    expect((await accountRow(account.id)).last_used_at).toBeNull();
  });

  it('--revoke keeps an entry whose working token belongs to an account the credential cannot see (exit 1)', async () => {
    const minter = await mintAccount(service.api.url, ROOT_KEY, {
      scopes: ['service_accounts:read', 'service_accounts:write'],
      privileged: true,
    });
    const unseen = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigsHolding(sandbox, targetMcp, { cursor: unseen.token });
    const before = readFileSync(files.cursor, 'utf8');
    const run = await runCommand(['disconnect', '--url', service.api.url, '--clients', 'editor-c', '--revoke', '--json'], sandbox, {
      env: { SVC_ADMIN_TOKEN: minter.token },
    });
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.json().revocations).toEqual([
      { account: unseen.name, status: 'failed', error: 'this credential cannot see the account to revoke it' },
    ]);
    expect(run.json().results).toEqual([
      expect.objectContaining({
        client: 'editor-c',
        status: 'failed',
        error: 'Kept platform-service, whose token was not revoked: this credential cannot see the account to revoke it.',
        removed: [],
      }),
    ]);
    expect(readFileSync(files.cursor, 'utf8')).toBe(before);
    expect((await call(service.api.url, 'GET', '/config', { token: unseen.token })).status).toBe(200);
  });

  it('--revoke with a credential that cannot list accounts refuses before removing anything (exit 1)', async () => {
    const files = writeConfigs(sandbox, targetMcp);
    const before = readFileSync(files.cursor, 'utf8');
    const account = await mintAccount(service.api.url, ROOT_KEY, { name: 'editor-c' });
    const readOnly = await mintAccount(service.api.url, ROOT_KEY, { scopes: ['agents:read'] });
    for (const [credential, error] of [
      ['wrong', /^The service did not accept the admin credential/],
      [readOnly.token, /^The admin credential may not do this \(Insufficient permissions. Required scope\(s\): service_accounts:/],
    ] as const) {
      const run = await runCommand(['disconnect', '--url', service.api.url, '--clients', 'editor-c', '--revoke', '--json'], sandbox, {
        env: { SVC_ADMIN_TOKEN: credential },
      });
      expect(run.code).toBe(1);
      expect(run.json().error).toMatch(error);
      expect(readFileSync(files.cursor, 'utf8')).toBe(before);
    }
    expect((await call(service.api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
  });

  it('--revoke keeps the entries of an account it could not revoke (a credential that may list, not revoke)', async () => {
    const admin = ['service_accounts:read', 'service_accounts:write'];
    const minter = await mintAccount(service.api.url, ROOT_KEY, { scopes: admin, privileged: true });
    const shared = await mintAccount(service.api.url, minter.token, { scopes: ['service_accounts:read'], privileged: true });
    const files = writeConfigsHolding(sandbox, targetMcp, { cursor: shared.token });
    const before = readFileSync(files.cursor, 'utf8');
    await query(service.databaseUrl, `UPDATE service_accounts SET scopes = ARRAY['service_accounts:read'] WHERE id = $1`, [minter.id]);
    const run = await runCommand(
      ['disconnect', '--url', service.api.url, '--clients', 'editor-c', '--revoke', '--name', shared.name, '--json'],
      sandbox,
      { env: { SVC_ADMIN_TOKEN: minter.token } },
    );
    // Nothing was done: exit 1 (3 is for a run where some of it was).
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.json().revocations).toEqual([
      { account: shared.name, status: 'failed', error: expect.stringContaining('service_accounts:write') },
    ]);
    expect(run.json().results).toEqual([expect.objectContaining({ client: 'editor-c', status: 'failed', removed: [] })]);
    expect(readFileSync(files.cursor, 'utf8')).toBe(before);
    expect((await accountRow(shared.id)).revoked_at).toBeNull();
  });

  it('--revoke needs the service: an unreachable one is an error (exit 1)', async () => {
    const run = await runCommand(['disconnect', '--url', 'http://127.0.0.1:2', '--revoke', '--clients', 'cursor', '--json'], sandbox, {
      env: asAdmin(),
    });
    expect(run.code).toBe(1);
    expect(run.json().error).toMatch(/^No running service found/);
  });

  it("--revoke leaves an account alone that another client holds under another spelling of the service's URL", async () => {
    const shared = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigsHolding(sandbox, targetMcp, { codex: shared.token });
    // A name that may reach this service or another one (localhost would be this service: see urlBelongsTo).
    const alias = targetMcp.replace('127.0.0.1', 'host.docker.internal');
    writeFileSync(
      files.cursor,
      JSON.stringify({ mcpServers: { local: { url: alias, headers: { Authorization: `Bearer ${shared.token}` } } } }),
    );
    const run = await disconnectAsAdmin('--clients', 'code-agent-b', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.json().revocations).toEqual([
      { account: shared.name, status: 'failed', error: expect.stringMatching(/^editor-c's entry 'local' in .* still holds its token/) },
    ]);
    expect((await call(service.api.url, 'GET', '/config', { token: shared.token })).status).toBe(200);

    // --server-name removes that entry whatever it points at; a token for another spelling is not sent, and that is said.
    const named = await disconnectAsAdmin('--clients', 'editor-c', '--server-name', 'local', '--revoke');
    expect(named.code, named.stdout + named.stderr).toBe(0);
    expect(named.json().results).toEqual([
      expect.objectContaining({ client: 'editor-c', status: 'removed', error: `Its token was not revoked: the entry points at ${alias}.` }),
    ]);
  });

  it("--revoke leaves an account alone that code-agent-a holds in another project's local scope", async () => {
    const shared = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigsHolding(sandbox, targetMcp, { cursor: shared.token });
    const claude = readJson(files.claude);
    claude.projects['/home/me/other-repo'] = {
      mcpServers: { 'platform-service': { type: 'http', url: targetMcp, headers: { Authorization: `Bearer ${shared.token}` } } },
    };
    writeFileSync(files.claude, JSON.stringify(claude));
    const run = await disconnectAsAdmin('--clients', 'editor-c', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.json().revocations).toEqual([
      {
        account: shared.name,
        status: 'failed',
        error: expect.stringMatching(/^code-agent-a's entry 'platform-service' in .*\.claude\.json still holds/),
      },
    ]);
    expect((await call(service.api.url, 'GET', '/config', { token: shared.token })).status).toBe(200);
    // It is never edited from here: disconnecting code-agent-a leaves it, so the account stays.
    const again = await disconnectAsAdmin('--clients', 'code-agent-a', '--revoke');
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(readJson(files.claude).projects['/home/me/other-repo'].mcpServers['platform-service'].url).toBe(targetMcp);
    expect((await call(service.api.url, 'GET', '/config', { token: shared.token })).status).toBe(200);
  });

  it("--revoke leaves an account alone whose token a config that does not parse holds as text, and says a rotated token's grace", async () => {
    const shared = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigsHolding(sandbox, targetMcp, { codex: shared.token, cursor: shared.token });
    writeFileSync(files.codex, `${readFileSync(files.codex, 'utf8')}\n[broken`);
    const run = await disconnectAsAdmin('--clients', 'editor-c', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.json().revocations).toEqual([
      {
        account: shared.name,
        status: 'failed',
        error: expect.stringMatching(new RegExp(`^${files.codex} does not parse, and its text holds the token`)),
      },
    ]);
    expect((await call(service.api.url, 'GET', '/config', { token: shared.token })).status).toBe(200);

    // A token replaced by a rotation is no account's current one: not revoked, and its grace is said.
    const rotated = await mintAccount(service.api.url, ROOT_KEY);
    expect((await call(service.api.url, 'POST', `/service-accounts/${rotated.id}/rotate`, { token: ROOT_KEY, json: {} })).status).toBe(200);
    writeConfigsHolding(sandbox, targetMcp, { cursor: rotated.token });
    const graced = await disconnectAsAdmin('--clients', 'editor-c', '--revoke');
    expect(graced.code, graced.stdout + graced.stderr).toBe(0);
    expect(graced.json().results).toEqual([
      expect.objectContaining({ status: 'removed', error: expect.stringContaining("then it works until the rotation's grace ends") }),
    ]);
  });

  it('--revoke: a config it may not rewrite (a symbolic link) keeps that entry, the others of the client go, exit 3', async () => {
    const account = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigsHolding(sandbox, targetMcp, { claude: account.token });
    const real = join(sandbox.home, 'dotfiles-claude.json');
    writeFileSync(real, readFileSync(files.claude, 'utf8'));
    rmSync(files.claude);
    symlinkSync(real, files.claude);
    const run = await disconnectAsAdmin('--clients', 'code-agent-a', '--revoke');
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.json().results).toEqual([
      expect.objectContaining({
        client: 'code-agent-a',
        status: 'removed',
        removed: ['team-server'],
        error: expect.stringContaining('symbolic link'),
      }),
    ]);
    expect(readJson(files.project).mcpServers).toEqual({ other: { type: 'http', url: OTHER_MCP } });
  });

  // Last: its failed lookups throttle this address's for a minute, as the service does.
  it("--revoke revokes nothing for tokens that do not work, even many written with an account's listed prefix", async () => {
    const victim = await mintAccount(service.api.url, ROOT_KEY);
    const files = writeConfigs(sandbox, targetMcp);
    // A project's .mcp.json is anyone's to write: made-up tokens beginning with another account's prefix, more than
    // the service's failed-lookup limit allows a minute (the rest are answered 429, which only a dead token gets).
    const planted = Object.fromEntries(
      Array.from({ length: 25 }, (_, index) => {
        const token = `${victim.token_prefix}${String(index).padStart(victim.token.length - victim.token_prefix.length, 'x')}`;
        return [`team-${index}`, { type: 'http', url: targetMcp, headers: { Authorization: `Bearer ${token}` } }];
      }),
    );
    for (const name of [[], ['--name', victim.name]]) {
      writeFileSync(files.project, JSON.stringify({ mcpServers: planted }));
      const run = await disconnectAsAdmin('--clients', 'code-agent-a', '--revoke', ...name);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.json().revocations).toEqual([
        name.length
          ? {
              account: victim.name,
              status: 'not-found',
              error: `no entry removed holds its token; svc tokens revoke ${victim.name} revokes it by name`,
            }
          : { account: 'code-agent-a', status: 'not-found', error: null },
      ]);
      expect(readJson(files.project).mcpServers).toEqual({});
    }
    expect((await call(service.api.url, 'GET', '/config', { token: victim.token })).status).toBe(200);
  });
});

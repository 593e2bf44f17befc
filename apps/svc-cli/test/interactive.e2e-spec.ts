import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { cliSandbox, LiveService, startService, SVC_BIN } from '../../../test/support/cli';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY } from '../../../test/support/principals';
import { waitFor } from '../../../test/support/processes';
import { remoteProxy } from '../../../test/support/tcp-proxy';
import { TmuxSession } from '../../../test/support/tmux';

describe('svc at a real terminal (tmux)', () => {
  let service: LiveService;
  let session: TmuxSession | null = null;

  beforeAll(async () => {
    service = await startService({ OS_SECURITY_KEY: ROOT_KEY });
  });
  afterAll(() => service?.stop());
  afterEach(() => {
    session?.kill();
    session = null;
  });

  const terminalEnv = (home: string, extra: Record<string, string> = {}) => ({
    PATH: process.env.PATH ?? '',
    HOME: home,
    TERM: 'xterm-256color',
    ...extra,
  });

  it('tokens list fits an 80-column terminal: the widest cells are cut with …, no row wraps, the columns stay aligned', async () => {
    const sandbox = cliSandbox();
    const wide = await mintAccount(service.api.url, ROOT_KEY, {
      scopes: ['agents:read', 'agents:run', 'teams:read', 'teams:run', 'workflows:read', 'workflows:run', 'sessions:read', 'config:read'],
    });
    const env = terminalEnv(sandbox.home, { SERVICE_URL: service.api.url, OS_SECURITY_KEY: ROOT_KEY });
    session = TmuxSession.start([process.execPath, SVC_BIN, 'tokens', 'list'], env, sandbox.cwd, 80);
    expect(await session.exitCode()).toBe(0);
    // capture-pane -J joins a wrapped row back into one line: a line over 80 is a row that wrapped.
    const lines = session.screen().split('\n');
    expect(lines.filter((line) => line.length > 80)).toEqual([]);
    const header = lines.find((line) => line.startsWith('Name'))!;
    const row = lines.find((line) => line.startsWith(wide.name))!;
    expect(row).toMatch(/ {2}agents:read,\S*… {2}/);
    expect(row).toContain('…');
    expect(row.indexOf('active')).toBe(header.indexOf('Status'));
  });

  it('tokens revoke asks first: No keeps the account, Yes revokes it', async () => {
    const sandbox = cliSandbox();
    const account = await mintAccount(service.api.url, ROOT_KEY);
    const env = terminalEnv(sandbox.home, { SERVICE_URL: service.api.url, OS_SECURITY_KEY: ROOT_KEY });

    session = TmuxSession.start([process.execPath, SVC_BIN, 'tokens', 'revoke', account.name], env, sandbox.cwd);
    await session.waitForText(`Revoke service account '${account.name}'? Its tokens stop working on their next request.`);
    session.type('n', 'Enter');
    expect(await session.exitCode()).toBe(0);
    expect(session.screen()).toContain('Aborted; no changes made.');
    expect((await call(service.api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
    session.kill();

    session = TmuxSession.start([process.execPath, SVC_BIN, 'tokens', 'revoke', account.name], env, sandbox.cwd);
    await session.waitForText('Revoke service account');
    session.type('y', 'Enter');
    expect(await session.exitCode()).toBe(0);
    expect(session.screen()).toContain(`Revoked service account '${account.name}'`);
    expect((await call(service.api.url, 'GET', '/config', { token: account.token })).status).toBe(401);
  });

  it('connect asks before rotating an existing account; Yes rotates it, the old token working through its grace', async () => {
    const sandbox = cliSandbox();
    mkdirSync(join(sandbox.home, '.cursor'));
    const mcpService = await startService({ OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'true' });
    try {
      const old = await mintAccount(mcpService.api.url, ROOT_KEY, { name: 'editor-c' });
      const env = terminalEnv(sandbox.home, { SERVICE_URL: mcpService.api.url, OS_SECURITY_KEY: ROOT_KEY });
      session = TmuxSession.start([process.execPath, SVC_BIN, 'connect', '--clients', 'cursor'], env, sandbox.cwd);
      await session.waitForText("Service account 'editor-c' already exists");
      await session.waitForText("Rotate the token of 'editor-c'? Its old token keeps working for 1h, then stops");
      session.type('y', 'Enter');
      expect(await session.exitCode(60_000)).toBe(0);
      expect(session.screen()).toMatch(/editor-c \(Cursor\): connected/);
      expect((await call(mcpService.api.url, 'GET', '/config', { token: old.token })).status).toBe(200);
      const stored = JSON.parse(readFileSync(join(sandbox.home, '.cursor', 'mcp.json'), 'utf8')).mcpServers['platform-service'];
      const token = stored.headers.Authorization.slice('Bearer '.length);
      expect(token).not.toBe(old.token);
      expect((await call(mcpService.api.url, 'GET', '/config', { token })).body.principal).toBe('sa:editor-c');
    } finally {
      await mcpService.stop();
    }
  });

  it('Ctrl-C at a connect prompt aborts the whole command (exit 130): no later client gets an account or an entry', async () => {
    const sandbox = cliSandbox();
    mkdirSync(join(sandbox.home, '.cursor'));
    const mcpService = await startService({ OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'true' });
    try {
      await mintAccount(mcpService.api.url, ROOT_KEY, { name: 'editor-c' });
      const env = terminalEnv(sandbox.home, { SERVICE_URL: mcpService.api.url, OS_SECURITY_KEY: ROOT_KEY, NO_COLOR: '1' });
      session = TmuxSession.start([process.execPath, SVC_BIN, 'connect', '--clients', 'cursor,code-agent-a'], env, sandbox.cwd);
      await session.waitForText("Rotate the token of 'editor-c'?");
      session.type('', 'C-c');
      expect(await session.exitCode()).toBe(130);
      expect(session.screen()).toContain('Aborted; no changes made.');
      expect(session.screen()).not.toContain('Error:');
      const accounts = (await call(mcpService.api.url, 'GET', '/service-accounts', { token: ROOT_KEY })).body;
      expect(JSON.stringify(accounts)).not.toContain('code-agent-a');
      expect(existsSync(join(sandbox.home, '.claude.json'))).toBe(false);
      expect(existsSync(join(sandbox.home, '.cursor', 'mcp.json'))).toBe(false);
      session.kill();

      // Interrupted after a first client was connected: that one is reported, and nothing further changes.
      session = TmuxSession.start([process.execPath, SVC_BIN, 'connect', '--clients', 'code-agent-a,cursor'], env, sandbox.cwd);
      await session.waitForText("Rotate the token of 'editor-c'?");
      session.type('', 'C-c');
      expect(await session.exitCode()).toBe(130);
      expect(session.screen()).toMatch(/code-agent-a \(Claude Code\): connected/);
      expect(session.screen()).toContain('Aborted; nothing further was changed.');
      expect(existsSync(join(sandbox.home, '.cursor', 'mcp.json'))).toBe(false);
    } finally {
      await mcpService.stop();
    }
  });

  it('prompts for the admin credential (hidden) when none is exported', async () => {
    const sandbox = cliSandbox();
    session = TmuxSession.start(
      [process.execPath, SVC_BIN, 'tokens', 'list'],
      terminalEnv(sandbox.home, { SERVICE_URL: service.api.url, NO_COLOR: '1' }),
      sandbox.cwd,
    );
    await session.waitForText('Admin credential for this service');
    session.type(ROOT_KEY, 'Enter');
    expect(await session.exitCode()).toBe(0);
    const screen = session.screen();
    expect(screen).not.toContain(ROOT_KEY);
    expect(screen).toMatch(/Name\s+Token\s+Scopes/);
    session.kill();

    // A wrong one typed: the hint says it was the one typed, not a variable.
    session = TmuxSession.start(
      [process.execPath, SVC_BIN, 'tokens', 'list'],
      terminalEnv(sandbox.home, { SERVICE_URL: service.api.url, NO_COLOR: '1' }),
      sandbox.cwd,
    );
    await session.waitForText('Admin credential for this service');
    session.type('not-the-key', 'Enter');
    expect(await session.exitCode()).toBe(1);
    expect(session.screen().replace(/\s+/g, ' ')).toContain('svc sent the credential typed at the prompt');
  });

  it('asks before trusting a remote SERVICE_URL from a .env file: No sends nothing, Yes goes on', async () => {
    const sandbox = cliSandbox();
    const { proxy, url: remoteUrl } = await remoteProxy(service.api.url);
    try {
      writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${remoteUrl}\n`);
      const argv = [process.execPath, SVC_BIN, 'tokens', 'list', '--allow-http'];
      const env = terminalEnv(sandbox.home, { OS_SECURITY_KEY: ROOT_KEY, NO_COLOR: '1' });

      session = TmuxSession.start(argv, env, sandbox.cwd);
      await session.waitForText(`Trust SERVICE_URL=${remoteUrl} (from .env)?`);
      session.type('n', 'Enter');
      expect(await session.exitCode()).toBe(1);
      expect(session.screen()).toContain('Aborted; no changes made.');
      // Discovery probed the URL; the credential never went there.
      expect(proxy.received()).toContain('GET /health');
      expect(proxy.received()).not.toContain(ROOT_KEY);
      session.kill();

      session = TmuxSession.start(argv, env, sandbox.cwd);
      await session.waitForText('Trust SERVICE_URL=');
      session.type('y', 'Enter');
      expect(await session.exitCode()).toBe(0);
      expect(session.screen()).toMatch(/Name\s+Token\s+Scopes|No service accounts\./);
      expect(proxy.received()).toContain(`Bearer ${ROOT_KEY}`);
    } finally {
      await proxy.cut();
    }
  });

  it('connect asks which service when several answer, and connects the one chosen', async () => {
    const sandbox = cliSandbox();
    mkdirSync(join(sandbox.home, '.cursor'));
    const chosen = await startService({ OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'true' });
    try {
      // Two candidates answer: the .env file's service, and the one an existing Cursor entry points at.
      writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${service.api.url}\n`);
      const cursorConfig = join(sandbox.home, '.cursor', 'mcp.json');
      writeFileSync(cursorConfig, JSON.stringify({ mcpServers: { elsewhere: { url: `${chosen.api.url}/mcp` } } }));
      session = TmuxSession.start(
        [process.execPath, SVC_BIN, 'connect', '--clients', 'cursor'],
        terminalEnv(sandbox.home, { OS_SECURITY_KEY: ROOT_KEY, NO_COLOR: '1' }),
        sandbox.cwd,
      );
      await session.waitForText('Several services answered. Which one?');
      const activeLine = () =>
        session!
          .screen()
          .split('\n')
          .find((line) => line.includes('❯')) ?? '';
      // Each move is seen redrawn before the next is decided: pressing on over a slow redraw wraps past the choice.
      for (let moves = 0; !activeLine().includes(chosen.api.url) && moves < 6; moves++) {
        const before = activeLine();
        session.type('', 'Down');
        await waitFor(async () => activeLine() !== before, 5_000, 'the selection to move');
      }
      expect(activeLine()).toContain(chosen.api.url);
      session.type('', 'Enter');
      expect(await session.exitCode(60_000)).toBe(0);

      const servers = JSON.parse(readFileSync(cursorConfig, 'utf8')).mcpServers;
      expect(servers.elsewhere).toEqual({ url: `${chosen.api.url}/mcp` });
      expect(servers['platform-service'].url).toBe(`${chosen.api.url}/mcp`);
      const token = servers['platform-service'].headers.Authorization.slice('Bearer '.length);
      expect((await call(chosen.api.url, 'GET', '/config', { token })).status).toBe(200);
      expect((await call(service.api.url, 'GET', '/config', { token })).status).toBe(401);
    } finally {
      await chosen.stop();
    }
  });

  it('create prompts for a bundled template and the project name, then copies it', async () => {
    const sandbox = cliSandbox();
    mkdirSync(join(sandbox.cwd, 'taken'));

    session = TmuxSession.start([process.execPath, SVC_BIN, 'create'], terminalEnv(sandbox.home), sandbox.cwd);
    await session.waitForText('Template');
    // The menu lists only the bundled templates: platform-docker, then platform-node.
    await session.waitForText('platform-node');
    expect(session.screen()).toContain('platform-node');
    expect(session.screen()).not.toContain('platform-fly');
    session.type('', 'Down', 'Enter');
    await session.waitForText('Project name');
    session.type('taken', 'Enter');
    await session.waitForText('already exists');
    session.type('', 'C-u');
    session.type('my-node-app', 'Enter');
    expect(await session.exitCode()).toBe(0);
    const project = join(sandbox.cwd, 'my-node-app');
    expect(readFileSync(join(project, 'components.mjs'), 'utf8')).toBe(readFileSync('templates/platform-node/components.mjs', 'utf8'));
    expect(existsSync(join(project, 'compose.yaml'))).toBe(false);
    expect(readFileSync(join(project, '.env'), 'utf8')).toBe(readFileSync(join(project, 'example.env'), 'utf8'));
    expect(session.screen()).toContain('COMPONENTS_MODULE=');
  });

  it('colours output on a terminal, and never with NO_COLOR', async () => {
    const sandbox = cliSandbox();
    session = TmuxSession.start(
      [process.execPath, SVC_BIN, 'status', '--url', 'http://127.0.0.1:1'],
      terminalEnv(sandbox.home),
      sandbox.cwd,
    );
    expect(await session.exitCode()).toBe(1);
    expect(session.screen(true)).toContain('\u001b[');
    session.kill();
    session = TmuxSession.start(
      [process.execPath, SVC_BIN, 'status', '--url', 'http://127.0.0.1:1'],
      terminalEnv(sandbox.home, { NO_COLOR: '1' }),
      sandbox.cwd,
    );
    expect(await session.exitCode()).toBe(1);
    const plain = session.screen(true);
    expect(plain).toContain('Error: No running service found');
    expect(plain).not.toContain('\u001b[');
  });
});

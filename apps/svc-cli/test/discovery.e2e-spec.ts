import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { join } from 'node:path';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { CliSandbox, cliSandbox, defaultPortsInUse, LiveService, runCli, startService } from '../../../test/support/cli';
import { runCommand } from '../../../test/support/cli-in-process';
import { query } from '../../../test/support/database';
import { ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { remoteProxy, TcpProxy } from '../../../test/support/tcp-proxy';

const DESCRIPTOR_KEYS = ['auth_mode', 'discovered_via', 'mcp', 'name', 'os_id', 'url', 'url_source', 'url_source_file', 'version'];

describe('svc URL discovery and the credential gates', () => {
  let service: LiveService;
  let sandbox: CliSandbox;
  // Never served: below the ports the kernel hands out, and one fetch calls (it refuses port 1).
  const deadUrl = 'http://127.0.0.1:2';

  beforeAll(async () => {
    service = await startService({ OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'false' });
  });
  afterAll(() => service?.stop());
  beforeEach(() => {
    sandbox = cliSandbox();
  });

  const status = (args: string[] = [], env: Record<string, string> = {}) => runCommand(['status', '--json', ...args], sandbox, { env });

  it('--url comes first and yields the full descriptor from /info', async () => {
    const run = await status(['--url', `${service.api.url}/`], { SERVICE_URL: deadUrl });
    expect(run.code).toBe(0);
    const { os, clients } = run.json();
    expect(Object.keys(os).sort()).toEqual(DESCRIPTOR_KEYS);
    expect(os).toEqual({
      url: service.api.url,
      name: 'Platform Service',
      os_id: 'platform-service',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      mcp: { enabled: false, path: null, oauth: null },
      auth_mode: 'security_key',
      discovered_via: 'info',
      url_source: 'flag',
      url_source_file: null,
    });
    expect(clients.map((client: { client: string }) => client.client)).toEqual([
      'code-agent-a',
      'desktop-app-a',
      'code-agent-b',
      'editor-c',
    ]);
  });

  it('an explicit --url that does not answer is an error, never a fallback', async () => {
    const run = await status(['--url', deadUrl], { SERVICE_URL: service.api.url });
    expect(run.code).toBe(1);
    expect(run.json()).toEqual({
      error: `No running service found (tried: ${deadUrl} (from --url): connect ECONNREFUSED ${deadUrl.replace('http://', '')}).`,
      hint: 'Check the URL and that the service runs there (npm start).',
    });
  });

  it('says why a URL is not the service: something else answers there', async () => {
    const other = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>hi</html>'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
      const run = await status(['--url', url]);
      expect(run.code).toBe(1);
      expect(run.json().error).toBe(
        `No running service found (tried: ${url} (from --url): GET /health answered 200, not JSON: not this service).`,
      );
    } finally {
      await new Promise((done) => other.close(done));
    }
  });

  it('a --url pasted with /mcp (the MCP endpoint npm start prints) is answered with the base URL to use', async () => {
    const run = await status(['--url', `${service.api.url}/mcp`], {});
    expect(run.code).toBe(1);
    expect(run.json().hint).toBe(`${service.api.url}/mcp is the MCP endpoint; svc wants the service's base URL: ${service.api.url}`);
  });

  it('SERVICE_URL comes next and skips the env files', async () => {
    writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${deadUrl}\n`);
    const run = await status([], { SERVICE_URL: service.api.url });
    expect(run.code).toBe(0);
    expect(run.json().os).toMatchObject({ url: service.api.url, url_source: 'env', url_source_file: null });
  });

  it('reads SERVICE_URL from .env.production before .env', async () => {
    writeFileSync(join(sandbox.cwd, '.env.production'), `# deployed\nexport SERVICE_URL="${service.api.url}" # quoted\n`);
    writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${deadUrl}\n`);
    const run = await status();
    expect(run.json().os).toMatchObject({ url: service.api.url, url_source: 'env-file', url_source_file: '.env.production' });
  });

  it('falls back to .env, where the last assignment wins and inline comments are cut', async () => {
    writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${deadUrl}\nOTHER=1\nSERVICE_URL=${service.api.url}   # local api\n`);
    const run = await status();
    expect(run.json().os).toMatchObject({ url: service.api.url, url_source: 'env-file', url_source_file: '.env' });
  });

  it('an env-file URL that does not answer hides the localhost defaults in scripted runs', async () => {
    writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${deadUrl}\n`);
    const run = await status();
    expect(run.code).toBe(1);
    expect(run.json()).toEqual({
      error: `No running service found (tried: ${deadUrl} (from SERVICE_URL in .env): connect ECONNREFUSED ${deadUrl.replace('http://', '')}).`,
      // npm start writes .env's URL at each start: a dead one is most often a stopped npm start.
      hint: 'Is the service running? Start it (npm start), or check SERVICE_URL in .env, or pass --url.',
    });
    // An operator's .env.production is no npm start's: only the file is named.
    writeFileSync(join(sandbox.cwd, '.env.production'), `SERVICE_URL=${deadUrl}\n`);
    const production = await status();
    expect(production.code).toBe(1);
    expect(production.json().hint).toBe('Check SERVICE_URL in .env.production, or pass --url.');
  });

  it('without any URL it probes localhost 7777, 7778, 7779 and 8000 in order', async (context) => {
    const inUse = await defaultPortsInUse();
    // Something else on this machine holds a default port: the probe order cannot be observed, so say so.
    context.skip(inUse.length > 0, `a default port is in use (${inUse.join(', ')})`);
    const run = await runCommand(['tokens', 'list', '--json'], sandbox, { env: { OS_SECURITY_KEY: ROOT_KEY } });
    expect(run.code).toBe(1);
    expect(run.json().error).toMatch(
      /^No running service found \(tried: http:\/\/localhost:7777 \(from default\): connect ECONNREFUSED \S+:7777; http:\/\/localhost:7778 \(from default\): .*; http:\/\/localhost:7779 \(from default\): .*; http:\/\/localhost:8000 \(from default\): .*\)\.$/,
    );
  });

  it('a scripted run that falls back to a default port says which URL and why in its first stderr line', async (context) => {
    const inUse = await defaultPortsInUse();
    context.skip(inUse.length > 0, `a default port is in use (${inUse.join(', ')})`);
    // Something that answers /health on the third default port.
    const fake = createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(request.url === '/health' ? '{"status":"ok"}' : '{}');
    });
    await new Promise<void>((done) => fake.listen(7779, 'localhost', done));
    try {
      const run = await runCommand(['status'], sandbox);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr.split('\n')[0]).toBe(
        'Using http://localhost:7779 (no --url, SERVICE_URL, or SERVICE_URL in ./.env.production or ./.env; tried the default ports).',
      );

      // A server that answered only the probe may be anyone's: disconnect removes there only an entry with a svc_pat_ token.
      const cursor = join(sandbox.home, '.cursor', 'mcp.json');
      mkdirSync(join(cursor, '..'), { recursive: true });
      const theirs = { url: 'http://localhost:7779/mcp', headers: { 'X-API-Key': 'their-own-api-key' } };
      const ours = { url: 'http://localhost:7779/mcp', headers: { Authorization: 'Bearer svc_pat_AbCdEfGhIjKlMnOpQrStUv' } };
      writeFileSync(cursor, JSON.stringify({ mcpServers: { 'other-tool': theirs, 'platform-service': ours } }));
      const disconnect = await runCommand(['disconnect', '--clients', 'editor-c', '--json'], sandbox);
      expect(disconnect.code, disconnect.stderr).toBe(0);
      expect(disconnect.json().results).toEqual([
        expect.objectContaining({ status: 'removed', removed: ['platform-service'], note: expect.stringMatching(/^Kept other-tool /) }),
      ]);
      expect(JSON.parse(readFileSync(cursor, 'utf8')).mcpServers).toEqual({ 'other-tool': theirs });
    } finally {
      await new Promise((done) => fake.close(done));
    }
  });

  it('on an instance without authentication, minting says svc sends no credential there and how to give the service a key', async () => {
    const open = await startService({ MCP_ENABLED: 'false' });
    try {
      // An exported credential stays here (the server may not be the operator's): the same answer with or without one.
      for (const env of [{}, { OS_SECURITY_KEY: 'an-exported-key-0000000000000' }] as Record<string, string>[]) {
        const run = await runCommand(['tokens', 'create', 'from-nobody', '--url', open.api.url, '--json'], sandbox, { env });
        expect(run.code).toBe(1);
        expect(run.json()).toEqual({
          error: expect.stringMatching(/^This service has no authentication, and this needs a credential it can verify \(/),
          hint: expect.stringContaining('start it with OS_SECURITY_KEY set, then export the same key here'),
        });
      }
      // Listing needs none there: nothing is asked for.
      expect((await runCommand(['tokens', 'list', '--url', open.api.url, '--json'], sandbox)).code).toBe(0);
    } finally {
      await open.stop();
    }
  });

  it('rejects a URL that is not http(s): from --url a usage error (exit 2, stderr), from SERVICE_URL exit 1 naming it', async () => {
    // Spawned: a usage error exits the process.
    const flag = await runCli(['status', '--json', '--url', 'ftp://example.com'], sandbox);
    expect(flag.code).toBe(2);
    expect(flag.stdout).toBe('');
    expect(flag.stderr).toContain('Invalid service URL: ftp://example.com (from --url)');
    const env = await status([], { SERVICE_URL: 'ftp://example.com' });
    expect(env.code).toBe(1);
    expect(env.json().error).toBe('Invalid service URL: ftp://example.com (from SERVICE_URL)');
  });

  // Spawned: each run a fresh process, as an operator's, so no connection outlives a run through the proxy.
  describe('a service that looks remote (reached through a non-loopback address)', () => {
    let proxy: TcpProxy;
    let remoteUrl: string;

    beforeEach(async () => {
      ({ proxy, url: remoteUrl } = await remoteProxy(service.api.url));
    });

    it('refuses to send the admin credential over plaintext HTTP before any request carries it', async () => {
      const name = uniqueName('remote');
      for (const args of [
        ['tokens', 'list'],
        ['tokens', 'create', name],
        ['tokens', 'revoke', name, '--yes'],
      ]) {
        const run = await runCli([...args, '--url', remoteUrl, '--json'], sandbox, { env: { OS_SECURITY_KEY: ROOT_KEY } });
        expect(run.code).toBe(1);
        expect(run.json()).toEqual({
          error: expect.stringMatching(new RegExp(`^Refusing to send the admin credential.* to ${remoteUrl} over plaintext HTTP\\.$`)),
          hint: expect.stringContaining('--allow-http'),
        });
      }
      expect(proxy.received()).toContain('GET /health');
      expect(proxy.received().toLowerCase()).not.toContain('authorization');
      expect(proxy.received()).not.toContain(ROOT_KEY);
      expect(await query(service.databaseUrl, 'SELECT 1 FROM service_accounts WHERE name = $1', [name])).toHaveLength(0);
      await proxy.cut();
    });

    it('refuses to send an exported admin credential to a remote service even when it runs without auth', async () => {
      const open = await startService({ MCP_ENABLED: 'false' });
      const { proxy: openProxy, url: openUrl } = await remoteProxy(open.api.url);
      try {
        const env = { SVC_ADMIN_TOKEN: 'svc_pat_exported-admin-token' };
        for (const args of [
          ['disconnect', '--revoke', '--clients', 'cursor'],
          ['tokens', 'list'],
        ]) {
          const run = await runCli([...args, '--url', openUrl, '--json'], sandbox, { env });
          expect(run.code, run.stdout).toBe(1);
          expect(run.json().error).toMatch(new RegExp(`^Refusing to send the admin credential to ${openUrl} over plaintext HTTP\\.$`));
        }
        expect(openProxy.received()).toContain('GET /health');
        expect(openProxy.received().toLowerCase()).not.toContain('authorization');
        const allowed = await runCli(
          ['disconnect', '--revoke', '--clients', 'cursor', '--url', openUrl, '--allow-http', '--json'],
          sandbox,
          { env },
        );
        expect(openProxy.received()).toContain('Bearer svc_pat_exported-admin-token');
        // Sent, as asked; and the open instance itself refuses a Host that is neither loopback nor its PUBLIC_URL
        // (at the first call, the listing that comes before any entry is removed).
        expect(allowed.code).toBe(1);
        expect(allowed.json().error).toMatch(/Host '[^']+' is not allowed on an instance without authentication/);
      } finally {
        await openProxy.cut();
        await open.stop();
      }
    });

    it('sends it with --allow-http', async () => {
      const run = await runCli(['tokens', 'create', uniqueName('remote'), '--url', remoteUrl, '--allow-http', '--json'], sandbox, {
        env: { OS_SECURITY_KEY: ROOT_KEY },
      });
      expect(run.code).toBe(0);
      expect(run.json().token).toMatch(/^svc_pat_/);
      expect(proxy.received().toLowerCase()).toContain('authorization: bearer');
      await proxy.cut();
    });

    it('trusts a remote SERVICE_URL from a .env file only with --yes', async () => {
      writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${remoteUrl}\n`);
      const env = { OS_SECURITY_KEY: ROOT_KEY };
      const untrusted = await runCli(['tokens', 'list', '--json'], sandbox, { env });
      expect(untrusted.code).toBe(1);
      expect(untrusted.json()).toEqual({
        error: `The URL in .env points to a remote host (${remoteUrl}).`,
        hint: 'Pass --url to target it explicitly, or --yes to trust it.',
      });
      // Refused, it is not announced as the service in use.
      const untrustedText = await runCli(['tokens', 'list'], sandbox, { env });
      expect(untrustedText.code).toBe(1);
      expect(untrustedText.stderr).toContain(`The URL in .env points to a remote host (${remoteUrl}).`);
      expect(untrustedText.stderr).not.toContain('Using the service at');
      const trusted = await runCli(['tokens', 'list', '--yes', '--json'], sandbox, { env });
      expect(trusted.json().error).toMatch(/^Refusing to send the admin credential/);
      const allowed = await runCli(['tokens', 'list', '--yes', '--allow-http', '--json'], sandbox, { env });
      expect(allowed.code).toBe(0);
      expect(allowed.json().service_accounts).toEqual(expect.any(Array));
      await proxy.cut();
    });
  });

  describe('an older server without structured discovery fields', () => {
    let legacy: Server;
    let legacyUrl: string;

    beforeAll(async () => {
      // Answers like a server from before /info carried mcp and auth_mode: discovery falls back to probes.
      legacy = createServer((request, response) => {
        const reply = (status: number, body: unknown) =>
          response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        if (request.url === '/health') return reply(200, { status: 'ok' });
        if (request.url === '/info') return reply(200, { name: 'Legacy OS', os_id: 'legacy' });
        if (request.url === '/mcp') return reply(401, { detail: 'Authorization header required' });
        if (request.url === '/config') return reply(401, { detail: 'Authorization header required' });
        return reply(404, { detail: 'Not Found' });
      });
      await new Promise<void>((resolve) => legacy.listen(0, '127.0.0.1', resolve));
      legacyUrl = `http://127.0.0.1:${(legacy.address() as { port: number }).port}`;
    });
    afterAll(() => new Promise((resolve) => legacy.close(resolve)));

    it('infers MCP from POST /mcp and the auth mode from an unauthenticated GET /config', async () => {
      const run = await status(['--url', legacyUrl]);
      expect(run.code).toBe(0);
      expect(run.json().os).toEqual({
        url: legacyUrl,
        name: 'Legacy OS',
        os_id: 'legacy',
        version: null,
        mcp: { enabled: true, path: '/mcp', oauth: null },
        auth_mode: 'security_key',
        discovered_via: 'probe',
        url_source: 'flag',
        url_source_file: null,
      });
    });
  });
});

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { testPort } from '../../../test/support/ports';
import { mintAccount, ROOT_KEY } from '../../../test/support/principals';
import { bootFailureOf, spawnNode, startApi, waitFor } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';
import { TmuxSession } from '../../../test/support/tmux';

const haveTmux = spawnSync('sh', ['-c', 'command -v tmux']).status === 0;
if (!haveTmux) {
  console.warn('Skipping the terminal log test: tmux not installed (.ci/run installs it).');
}

describe('configuration at boot', () => {
  it('refuses to start on bad values, naming every variable and what it accepts', async () => {
    const api = spawnNode('dist/apps/api/src/main.js', {
      DATABASE_URL: 'mysql://nope',
      PORT: 'eighty',
      QUEUE_ENABLED: 'perhaps',
      SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '-1',
      LOG_LEVEL: 'loud',
      LOG_FORMAT: 'text',
    });
    expect(await api.exited).toBe(1);
    // One JSON line, as a collector reads every other, though LOG_FORMAT itself is among the mistakes.
    expect(JSON.parse(api.output().trim())).toMatchObject({ level: 60, service: 'api' });
    const output = bootFailureOf(api.output());
    expect(output).toContain('LOG_FORMAT="text": must be one of auto, json, pretty');
    expect(output).toContain('DATABASE_URL=(value hidden): must be a postgres:// or postgresql:// URL');
    expect(api.output()).not.toContain('mysql://nope');
    expect(output).toContain('PORT="eighty": must be a whole number from 0 to 65535');
    expect(output).toContain('QUEUE_ENABLED="perhaps": must be one of true, 1, yes, on, false, 0, no, off');
    expect(output).toContain('SERVICE_ACCOUNT_CACHE_TTL_SECONDS=-1: must be a whole number from 0 to 86400');
    expect(output).toContain('LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace, silent');
    expect(output).not.toMatch(/\bat .+\.js:\d+/);
  });

  it('a DATABASE_URL asking for TLS of a server without it ends the boot at once, saying so', async () => {
    const url = new URL(await createTestDatabase());
    url.searchParams.set('sslmode', 'require');
    const started = Date.now();
    const api = spawnNode('dist/apps/api/src/main.js', { DATABASE_URL: url.toString(), LOG_FORMAT: 'json' });
    expect(await api.exited).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(bootFailureOf(api.output())).toContain('The server does not support SSL connections');
  }, 60_000);

  it('a DATABASE_URL whose login is refused ends the boot at once (no retry can fix it), with the one-line reason in JSON', async () => {
    const url = new URL(await createTestDatabase());
    url.password = 'not-the-password';
    const started = Date.now();
    const api = spawnNode('dist/apps/api/src/main.js', { DATABASE_URL: url.toString(), LOG_FORMAT: 'json' });
    expect(await api.exited).toBe(1);
    // Ten retries three seconds apart took half a minute.
    expect(Date.now() - started).toBeLessThan(15_000);
    const lines = api.output().trim().split('\n');
    // The last line too is JSON, as every other: a collector reads the reason like any fatal line.
    expect(JSON.parse(lines.pop()!)).toMatchObject({
      level: 60,
      service: 'api',
      msg:
        `The api cannot start: the database DATABASE_URL names (${url.hostname}:${url.port}${url.pathname}) refused the connection: ` +
        'password authentication failed for user "postgres". Check DATABASE_URL (host, port, user, password, database) and that PostgreSQL runs there.',
    });
    const before = lines.map((line) => JSON.parse(line) as { msg: string });
    expect(before.filter((line) => /Retrying/.test(line.msg))).toEqual([]);
    expect(api.output()).not.toContain('not-the-password');
    expect(api.output()).not.toMatch(/\bat .+\.js:\d+/);
  }, 60_000);

  it('a database that does not answer yet is retried, each retry one JSON line written as it happens', async () => {
    const api = spawnNode('dist/apps/api/src/main.js', {
      DATABASE_URL: `postgresql://postgres:secret@127.0.0.1:${await testPort()}/platform`,
      LOG_FORMAT: 'json',
    });
    try {
      // Written while the boot is still retrying, not held back until it ends.
      await waitFor(async () => api.output().includes('Retrying (1)'), 15_000, 'the first retry line');
      expect(api.child.exitCode).toBeNull();
      const retry = api
        .output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { context?: string; msg: string; error?: string })
        .find((line) => line.msg.includes('Retrying (1)'));
      expect(retry).toMatchObject({ context: 'TypeOrmModule', error: expect.stringContaining('ECONNREFUSED') });
      expect(api.output()).not.toContain('secret');
    } finally {
      api.child.kill('SIGKILL');
      await api.exited;
    }
  }, 60_000);

  it('refuses to start without DATABASE_URL', async () => {
    const api = spawnNode('dist/apps/api/src/main.js', {});
    expect(await api.exited).toBe(1);
    expect(api.output()).toContain('DATABASE_URL: is required');
  });
});

describe('a port already in use', () => {
  // The api opens two ports: the one it serves on (PORT) and, when set, the metrics one (API_METRICS_PORT).
  it.each(['PORT', 'API_METRICS_PORT'])('is one line naming the port and its variable (%s), without a stack trace', async (variable) => {
    const port = await testPort();
    const holder = createServer();
    await new Promise<void>((done) => holder.listen(port, '127.0.0.1', done));
    try {
      const api = spawnNode('dist/apps/api/src/main.js', {
        DATABASE_URL: await createTestDatabase(),
        HOST: '127.0.0.1',
        PORT: String(variable === 'PORT' ? port : await testPort()),
        ...(variable === 'API_METRICS_PORT' ? { API_METRICS_PORT: String(port) } : {}),
      });
      expect(await api.exited).toBe(1);
      const output = api.output();
      expect(bootFailureOf(output)).toBe(
        `The api cannot start: port ${port} on 127.0.0.1 is already in use by another process. Stop that process, or set ${variable} to a free port.`,
      );
      expect(output).not.toMatch(/^\s+at /m);
      expect(output).not.toContain('\\n    at ');
    } finally {
      await new Promise((done) => holder.close(done));
    }
  });
});

describe('structured logs', () => {
  it('logs JSON lines with a request id and never a credential', async () => {
    const api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, LOG_LEVEL: 'info' });
    try {
      const account = await mintAccount(api.url, ROOT_KEY);
      const response = await call(api.url, 'GET', '/config', { token: account.token, headers: { 'x-request-id': 'trace-me-123' } });
      expect(response.headers.get('x-request-id')).toBe('trace-me-123');
      await call(api.url, 'GET', '/config', { token: 'svc_pat_wrongwrongwrongwrongwrongwrong' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const lines = api.output().trim().split('\n');
      const entries = lines.map((line) => JSON.parse(line));
      expect(entries.some((entry) => entry.request_id === 'trace-me-123')).toBe(true);
      // Which release answers: the package's version, and the interface's.
      const version = JSON.parse(readFileSync('package.json', 'utf8')).version;
      expect(entries.find((entry) => /^api listening on/.test(entry.msg))).toMatchObject({ version, interface_version: '3.0.4' });
      for (const secret of [account.token, ROOT_KEY, 'svc_pat_wrongwrongwrongwrongwrongwrong']) {
        expect(api.output()).not.toContain(secret);
      }
    } finally {
      await api.stop();
    }
  });

  it('binds the request id to the lines a request logs on its way, not only to its access line', async () => {
    const url = new URL(await createTestDatabase());
    const proxy = new TcpProxy(url.hostname, Number(url.port));
    url.port = String(await proxy.listen());
    const api = await startApi({ DATABASE_URL: url.toString(), OS_SECURITY_KEY: ROOT_KEY, LOG_LEVEL: 'info' });
    try {
      await proxy.cut();
      const response = await call(api.url, 'GET', '/sessions', { token: ROOT_KEY, headers: { 'x-request-id': 'during-outage-1' } });
      expect(response.status).toBe(503);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const entries = api
        .output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.request_id === 'during-outage-1');
      expect(entries).toMatchObject([
        { level: 50, msg: 'Database unavailable', err: { message: expect.any(String) } },
        { level: 50, url: '/sessions', status: 503, msg: expect.stringMatching(/^GET \/sessions 503 \d+ ms security_key$/) },
      ]);
    } finally {
      await api.stop();
    }
  });

  it('a line names its request id once: the Host refusal of an open instance, logged inside the request', async () => {
    const api = await startApi({ DATABASE_URL: await createTestDatabase(), LOG_LEVEL: 'info' });
    try {
      const refused = await new Promise<number>((resolve, reject) => {
        const request = httpRequest(`${api.url}/config`, { headers: { host: 'rebinding.example', 'x-request-id': 'foreign-host' } });
        request.on('response', (response) => resolve(response.statusCode ?? 0)).on('error', reject);
        request.end();
      });
      expect(refused).toBe(403);
      await waitFor(async () => api.output().includes('"status":403'), 5_000, 'the access line of the refusal');
      const lines = api.output().trim().split('\n');
      expect(lines.filter((line) => line.includes('refused a request for a Host'))).toEqual([
        expect.stringContaining('"request_id":"foreign-host"'),
      ]);
      expect(lines.filter((line) => (line.match(/"request_id":/g) ?? []).length > 1)).toEqual([]);
    } finally {
      await api.stop();
    }
  });

  it('the lease renewals of runs executed in the api log as the process, not as the request that started the first run', async () => {
    const url = new URL(await createTestDatabase());
    const proxy = new TcpProxy(url.hostname, Number(url.port));
    url.port = String(await proxy.listen());
    // An agent that waits without asking the database anything (the demo sleep-agent checks for cancellation,
    // so it would fail, and give its lease back, at the cut).
    const components = join(mkdtempSync(join(tmpdir(), 'lease-log-')), 'components.mjs');
    writeFileSync(
      components,
      `export default [{ kind: 'agent', id: 'hold-agent', name: 'Hold', run: () => new Promise((done) => setTimeout(() => done('held'), 4000)) }];`,
    );
    const api = await startApi({
      DATABASE_URL: url.toString(),
      OS_SECURITY_KEY: ROOT_KEY,
      LOG_LEVEL: 'info',
      COMPONENTS_MODULE: components,
      QUEUE_LOCK_GRACE_SECONDS: '3',
    });
    try {
      // A 4-second run executed by the api itself holds a lease, renewed every second; then the database goes away.
      const run = call(api.url, 'POST', '/agents/hold-agent/runs', {
        token: ROOT_KEY,
        json: { message: '4' },
        headers: { 'x-request-id': 'first-sync-run' },
      });
      await waitFor(
        async () =>
          (await query<{ n: number }>(url.toString(), 'SELECT count(*)::int AS n FROM run_leases').catch(() => [{ n: 0 }]))[0].n === 1,
        5_000,
        'the run’s lease',
      );
      await proxy.cut();
      await waitFor(async () => api.output().includes('Renewing the leases of running runs failed'), 5_000, 'a failed renewal');
      const renewals = api
        .output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.msg === 'Renewing the leases of running runs failed');
      expect(renewals.length).toBeGreaterThan(0);
      for (const renewal of renewals) {
        expect(renewal.request_id).toBeUndefined();
      }
      await run;
    } finally {
      await api.stop();
    }
  });

  it.each([
    ['stdout is not a terminal', {}],
    ['LOG_FORMAT=json', { LOG_FORMAT: 'json' }],
  ])(
    'logs JSON with one access line per request and no Authorization value when %s; Nest’s start-up chatter only at debug',
    async (_, format) => {
      const env = { DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, LOG_LEVEL: 'info', MCP_ENABLED: 'true' };
      const api = await startApi({ ...env, ...format });
      try {
        await call(api.url, 'GET', '/config', { token: ROOT_KEY, headers: { 'x-request-id': 'one-line-please' } });
        await call(api.url, 'GET', '/info', { headers: { 'x-request-id': 'second-request' } });
        await call(api.url, 'GET', '/health', { headers: { 'x-request-id': 'a-probe' } });
        const account = await mintAccount(api.url, ROOT_KEY);
        await call(api.url, 'GET', '/config', { token: account.token, headers: { 'x-request-id': 'as-a-token' } });
        // /mcp authenticates in its route, not through the scope guard: its line names the caller too.
        await call(api.url, 'POST', '/mcp', {
          token: account.token,
          headers: { 'x-request-id': 'over-mcp', accept: 'application/json, text/event-stream' },
          json: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        });
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(api.output()).not.toContain(ROOT_KEY);
        expect(api.output()).not.toContain(account.token);
        const entries = api
          .output()
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line));
        const request = entries.filter((entry) => entry.request_id === 'one-line-please');
        expect(request).toHaveLength(1);
        expect(request[0]).toMatchObject({
          level: 30,
          method: 'GET',
          url: '/config',
          status: 200,
          ms: expect.any(Number),
          caller: 'security_key',
          ip: '127.0.0.1',
          msg: expect.stringMatching(/^GET \/config 200 \d+ ms security_key$/),
        });
        // Who called: the authenticated principal (never its credential).
        expect(entries.filter((entry) => entry.request_id === 'as-a-token')).toMatchObject([
          { url: '/config', status: 200, caller: `sa:${account.name}`, msg: expect.stringMatching(new RegExp(` sa:${account.name}$`)) },
        ]);
        expect(entries.filter((entry) => entry.request_id === 'over-mcp')).toMatchObject([
          {
            url: '/mcp',
            status: 200,
            caller: `sa:${account.name}`,
            msg: expect.stringMatching(new RegExp(`^POST /mcp 200 \\d+ ms sa:${account.name}$`)),
          },
        ]);
        expect(entries.filter((entry) => entry.request_id === 'second-request')).toMatchObject([{ url: '/info', status: 200 }]);
        // Probes poll every few seconds: their access lines are debug, below this LOG_LEVEL.
        expect(entries.filter((entry) => entry.request_id === 'a-probe')).toEqual([]);
        expect(entries.filter((entry) => ['InstanceLoader', 'RoutesResolver', 'RouterExplorer'].includes(entry.context))).toEqual([]);
      } finally {
        await api.stop();
      }
    },
  );

  it('writes the access line of a stream its client leaves before the end, as of any request', async () => {
    const api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      LOG_LEVEL: 'info',
      DEMO_COMPONENTS: 'true',
    });
    try {
      // A 5-second run streamed as server-sent events: the client hangs up once the stream has begun.
      await new Promise<void>((resolve, reject) => {
        const request = httpRequest(`${api.url}/agents/sleep-agent/runs`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ROOT_KEY}`, 'content-type': 'application/json', 'x-request-id': 'left-early' },
        });
        request.on('response', (response) => {
          expect(response.headers['content-type']).toContain('text/event-stream');
          request.destroy();
          resolve();
        });
        request.on('error', reject);
        request.end(JSON.stringify({ message: '5', stream: true }));
      });
      await waitFor(
        async () => api.output().includes('"url":"/agents/sleep-agent/runs"'),
        5_000,
        'the access line of the stream left early',
      );
      const entries = api
        .output()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.request_id === 'left-early' && entry.url !== undefined);
      expect(entries).toMatchObject([
        {
          level: 30,
          method: 'POST',
          url: '/agents/sleep-agent/runs',
          status: 200,
          msg: expect.stringMatching(/^POST \/agents\/sleep-agent\/runs 200 \d+ ms security_key$/),
        },
      ]);
      expect(entries[0].ms).toBeLessThan(5_000);
    } finally {
      await api.stop();
    }
  });

  it('writes one readable line per event with LOG_FORMAT=pretty (the default on a terminal)', async () => {
    const api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'pretty',
    });
    try {
      await call(api.url, 'GET', '/info');
      await call(api.url, 'GET', '/config', { token: ROOT_KEY });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const lines = api.output().trim().split('\n');
      expect(
        lines.some((line) => /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO.*api GET \/info 200 \d+ ms/.test(line)),
        api.output(),
      ).toBe(true);
      expect(lines.every((line) => !line.startsWith('{'))).toBe(true);
      // The caller ends the access line's text, and is not repeated among the fields after it.
      const config = lines.find((line) => line.includes('GET /config 200'))!;
      const caller = /GET \/config 200 \d+ ms (\S+)/.exec(config)![1];
      expect(config.split(caller), config).toHaveLength(2);
    } finally {
      await api.stop();
    }
  });
});

describe.skipIf(!haveTmux)('logs on a terminal (tmux)', () => {
  it('are pretty and coloured by default, one line per request, without the route-mapping lines', async () => {
    const port = await testPort();
    const url = `http://127.0.0.1:${port}`;
    const env = {
      PATH: process.env.PATH ?? '',
      TERM: 'xterm-256color',
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
    };
    const session = TmuxSession.start([process.execPath, 'dist/apps/api/src/main.js'], env, process.cwd());
    try {
      await waitFor(async () => (await fetch(`${url}/health`)).ok, 60_000, 'the api to answer /health');
      await call(url, 'GET', '/config', { token: ROOT_KEY });
      const screen = await session.waitForText(/INFO.*api GET \/config 200 \d+ ms/);
      expect(screen).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO.*api GET \/config 200 \d+ ms/m);
      expect(screen).toMatch(/INFO.*api listening on http:\/\/127\.0\.0\.1:\d+ \(version /);
      expect(screen).not.toContain('GET /health');
      expect(screen).not.toContain('Mapped {');
      expect(screen).not.toContain('dependencies initialized');
      expect(screen).not.toContain('{"level"');
      expect(screen).not.toContain(ROOT_KEY);
      // Colour: the screen with its escape sequences has some (SGR, `ESC [ n m`) that the plain one has not.
      expect(session.screen(true)).toContain('\u001b[');
      expect(screen).not.toContain('\u001b[');
    } finally {
      session.kill();
    }
  });
});

describe('shutdown', () => {
  /** One request on a connection of its own that closes after the response (as curl or a proxy does). */
  function oneShot(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    return new Promise((resolve, reject) => {
      const payload = JSON.stringify(body);
      const request = httpRequest(
        url,
        {
          method: 'POST',
          agent: false,
          headers: {
            authorization: `Bearer ${ROOT_KEY}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            connection: 'close',
          },
        },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  }

  it('on SIGTERM ends as soon as an in-flight request is answered, also when its client keeps the connection alive', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    try {
      // fetch keeps its connection alive after the answer, as a load balancer or an SDK does.
      const inFlight = call(api.url, 'POST', '/agents/sleep-agent/runs', { token: ROOT_KEY, json: { message: '1' } });
      await expect
        .poll(async () => (await query<{ n: number }>(databaseUrl, 'SELECT count(*)::int AS n FROM runs'))[0].n, { timeout: 10_000 })
        .toBe(1);
      const stopped = api.stop('SIGTERM');
      expect((await inFlight).status).toBe(200);
      const answeredAt = Date.now();
      const code = await Promise.race([stopped, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
      expect(code, api.output()).toBe(0);
      // Without the sweep it waited for the client to hang up: still running after 10 s.
      expect(Date.now() - answeredAt).toBeLessThan(5_000);
    } finally {
      await api.stop('SIGKILL');
    }
  }, 60_000);

  it('on SIGTERM lets an in-flight request finish, then ends and refuses new connections', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    try {
      // A synchronous run of sleep-agent holds its request open for 2 s.
      const startedAt = Date.now();
      const inFlight = oneShot(`${api.url}/agents/sleep-agent/runs`, { message: '2' });
      // Wait until the api has the run (its row exists), so the signal lands mid-request.
      await expect
        .poll(async () => (await query<{ n: number }>(databaseUrl, 'SELECT count(*)::int AS n FROM runs'))[0].n, { timeout: 10_000 })
        .toBe(1);
      const stopped = api.stop('SIGTERM');
      const response = await inFlight;
      // The run was not cut: it completed, after its full 2 s.
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ status: 'completed' });
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2000);
      // Nest closes the app, then the process exits 0 (a stop asked for), soon after.
      const code = await Promise.race([stopped, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
      expect(code, api.output()).toBe(0);
      expect(api.child.signalCode).toBeNull();
      expect(api.output()).not.toMatch(/"level":(50|60)/);
      const refused = await fetch(`${api.url}/health`).then(
        () => null,
        (error: Error & { cause?: { code?: string } }) => error.cause?.code,
      );
      expect(refused).toBe('ECONNREFUSED');
    } finally {
      await api.stop('SIGKILL');
    }
  }, 60_000);
});

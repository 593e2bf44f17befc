import { request as httpRequest } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { createTestDatabase } from '../../../test/support/database';
import { expectErrorBody } from '../../../test/support/error-bodies';
import { streamRun } from '../../../test/support/event-stream';
import { call } from '../../../test/support/http';
import { mintAccount, MintedAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';
import { Frame, SocketClient } from '../../../test/support/websocket';

const FINAL = ['RunCompleted', 'RunError', 'RunCancelled'];
/** Runs one socket may watch at once, as the README has it. */
const MAX_WATCHES = 16;
/** Runs one socket may have going at once. */
const MAX_RUNS = 16;

/** Sends a run frame and collects its events up to the final one (a run's events carry its run_id after RunStarted). */
async function runOver(socket: SocketClient, frame: Record<string, unknown>): Promise<Frame[]> {
  const from = socket.frames.length;
  socket.send({ action: 'run', ...frame });
  const started = await socket.next((received) => received.event === 'RunStarted' || received.event === 'error', 15_000, from);
  expect(started.event, JSON.stringify(started)).toBe('RunStarted');
  const runId = started.data!.run_id as string;
  await socket.final(runId);
  return socket.frames.slice(from).filter((received) => received.data?.run_id === runId);
}

describe('WebSocket /ws', () => {
  let api: RunningApi;
  let open: RunningApi;
  let worker: RunningProcess;
  let alice: MintedAccount;
  let bob: MintedAccount;
  let teamsOnly: MintedAccount;
  const sockets: SocketClient[] = [];
  const connect = async (baseUrl: string, token?: string) => {
    const socket = await SocketClient.open(baseUrl, token);
    sockets.push(socket);
    return socket;
  };

  beforeAll(async () => {
    const env = { DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' };
    [api, open] = await Promise.all([startApi(env), startApi({ DATABASE_URL: await createTestDatabase(), DEMO_COMPONENTS: 'true' })]);
    worker = await startWorker(env);
    alice = await mintAccount(api.url, ROOT_KEY);
    bob = await mintAccount(api.url, ROOT_KEY);
    teamsOnly = await mintAccount(api.url, ROOT_KEY, { scopes: ['teams:run'] });
    // Two apis and a worker: on two shared cores their boots alone have taken over a minute.
  }, 180_000);
  afterAll(async () => {
    sockets.forEach((socket) => socket.close());
    await worker?.stop();
    await Promise.all([api?.stop(), open?.stop()]);
  });

  it('authenticates by the upgrade header and streams a run with the same events as stream=true', async () => {
    const socket = await connect(api.url, alice.token);
    expect(await socket.next((frame) => frame.event === 'authenticated')).toEqual({
      event: 'authenticated',
      data: { principal: `sa:${alice.name}`, scopes: alice.scopes },
    });
    const overSocket = await runOver(socket, { component_type: 'agent', component_id: 'echo-agent', message: 'over the socket' });
    const overSse = await streamRun(api.url, '/agents/echo-agent/runs', { token: alice.token, json: { message: 'over the socket' } });
    expect(overSocket.map((frame) => frame.event)).toEqual(overSse.map((event) => event.event));
    expect(overSocket.map((frame) => frame.event)).toEqual(['RunStarted', 'RunContent', 'RunCompleted']);
    const [socketDone, sseDone] = [overSocket.at(-1)!.data!, overSse.at(-1)!.data];
    expect(Object.keys(socketDone).sort()).toEqual(Object.keys(sseDone).sort());
    expect(socketDone).toMatchObject({ status: 'completed', content: 'over the socket', user_id: `sa:${alice.name}`, background: false });
    // An ordinary run: readable over REST.
    const rest = await call(api.url, 'GET', `/agents/echo-agent/runs/${socketDone.run_id}`, { token: alice.token });
    expect(rest.body).toEqual(socketDone);
  });

  it('authenticates by a first frame, and refuses actions before it without closing', async () => {
    const socket = await connect(api.url);
    socket.send({ action: 'run', component_type: 'agent', component_id: 'echo-agent', message: 'too early' });
    expect(await socket.next((frame) => frame.event === 'error')).toMatchObject({ status: 401 });
    socket.send({ action: 'authenticate', token: alice.token });
    expect(await socket.next((frame) => frame.event === 'authenticated')).toMatchObject({ data: { principal: `sa:${alice.name}` } });
    const events = await runOver(socket, { component_type: 'team', component_id: 'echo-team', message: 'after the frame' });
    expect(events.at(-1)).toMatchObject({ event: 'RunCompleted', data: { content: 'after the frame' } });
  });

  it('closes a socket that sends no credential within 10 s with auth_error', async () => {
    const started = Date.now();
    const socket = await connect(api.url);
    const closed = await socket.closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(9_500);
    expect(closed.code).toBe(1008);
    expect(socket.frames).toEqual([{ event: 'auth_error', detail: expect.stringContaining('10 s') }]);
  }, 30_000);

  it('answers a bad token with auth_error and closes, even on an instance without authentication', async () => {
    const byHeader = await connect(open.url, 'not-a-real-token');
    expect((await byHeader.closed).code).toBe(1008);
    expect(byHeader.frames).toEqual([{ event: 'auth_error', detail: 'Invalid authentication token' }]);
    const byFrame = await connect(open.url);
    byFrame.send({ action: 'authenticate', token: 'svc_pat_not-a-real-token' });
    expect((await byFrame.closed).code).toBe(1008);
    expect(byFrame.frames).toEqual([{ event: 'auth_error', detail: 'Invalid authentication token' }]);
    // Without a token, an open instance serves the socket anonymously, as it serves REST.
    const anonymous = await connect(open.url);
    const events = await runOver(anonymous, { component_type: 'agent', component_id: 'echo-agent', message: 'anonymous' });
    expect(events.at(-1)).toMatchObject({ event: 'RunCompleted', data: { user_id: null } });
    expect(anonymous.frames[0]).toEqual({ event: 'authenticated', data: { principal: null, scopes: [] } });
    const bad = await connect(api.url);
    bad.send({ action: 'authenticate', token: 'svc_pat_not-a-real-token' });
    expect((await bad.closed).code).toBe(1008);
    expect(bad.frames).toEqual([{ event: 'auth_error', detail: expect.any(String) }]);
  });

  it("tags every frame answering an action with the action's request_id, errors included, so answers on one socket can be told apart", async () => {
    const socket = await connect(api.url, alice.token);
    await socket.next((frame) => frame.event === 'authenticated');
    socket.send({ action: 'run', component_type: 'agent', component_id: 'sleep-agent', message: '0.3', request_id: 'slow' });
    socket.send({ action: 'run', component_type: 'agent', component_id: 'echo-agent', message: 'quick', request_id: 'quick' });
    socket.send({ action: 'run', component_type: 'agent', component_id: 'nope', message: 'x', request_id: 'missing' });
    socket.send({ action: 'watch', run_id: 'not-a-uuid', request_id: 'bad-watch' });
    // A name every object has is no component type.
    socket.send({ action: 'run', component_type: 'constructor', component_id: 'echo-agent', message: 'x', request_id: 'bad-type' });
    socket.send({ action: 'run', component_type: 'agent', component_id: 'echo-agent', message: 'x', request_id: 7 });
    const slow = await socket.next((frame) => frame.request_id === 'slow' && frame.event === 'RunCompleted', 15_000);
    const quick = await socket.next((frame) => frame.request_id === 'quick' && frame.event === 'RunCompleted');
    expect(slow.data).toMatchObject({ content: 'Slept 0.3 s' });
    expect(quick.data).toMatchObject({ content: 'quick' });
    for (const tag of ['slow', 'quick']) {
      expect(socket.frames.filter((frame) => frame.request_id === tag).map((frame) => frame.event)).toEqual([
        'RunStarted',
        'RunContent',
        'RunCompleted',
      ]);
    }
    expect(await socket.next((frame) => frame.request_id === 'missing')).toMatchObject({ event: 'error', status: 404 });
    expect(await socket.next((frame) => frame.request_id === 'bad-watch')).toMatchObject({
      event: 'error',
      status: 422,
      detail: 'run_id must be a UUID',
    });
    expect(await socket.next((frame) => frame.request_id === 'bad-type')).toMatchObject({
      event: 'error',
      status: 422,
      detail: "'component_type' must be agent, team or workflow",
    });
    // A request_id that is not a string is refused (without one to echo).
    expect(await socket.next((frame) => frame.event === 'error' && frame.status === 422 && frame.request_id === undefined)).toMatchObject({
      detail: "'request_id' must be a non-empty string",
    });
  });

  it('follows a background run with watch until its final event', async () => {
    const queued = await call(api.url, 'POST', '/agents/sleep-agent/runs', {
      token: alice.token,
      json: { message: '0.5', background: true },
    });
    expect(queued.status).toBe(202);
    const socket = await connect(api.url, alice.token);
    socket.send({ action: 'watch', run_id: queued.body.run_id });
    expect(await socket.next((frame) => frame.event === 'RunStarted')).toMatchObject({ data: { run_id: queued.body.run_id } });
    expect(await socket.final(queued.body.run_id, 30_000)).toMatchObject({
      event: 'RunCompleted',
      data: { status: 'completed', content: 'Slept 0.5 s', background: true },
    });
    // The events a stream has: the content as a RunContent, before the final event.
    expect(socket.frames.map((frame) => frame.event)).toEqual(['authenticated', 'RunStarted', 'RunContent', 'RunCompleted']);
    expect(socket.frames[2]).toEqual({ event: 'RunContent', data: { run_id: queued.body.run_id, content: 'Slept 0.5 s' } });
  });

  it('cancels a run, and keeps another token from watching or cancelling it', async () => {
    const queued = await call(api.url, 'POST', '/agents/sleep-agent/runs', {
      token: alice.token,
      json: { message: '30', background: true },
    });
    const runId = queued.body.run_id as string;
    await waitFor(
      async () => (await call(api.url, 'GET', `/agents/sleep-agent/runs/${runId}`, { token: alice.token })).body.status === 'running',
      30_000,
      'the run to start',
    );
    const asBob = await connect(api.url, bob.token);
    asBob.send({ action: 'cancel', run_id: runId });
    expect(await asBob.next((frame) => frame.event === 'error')).toMatchObject({ status: 404 });
    const socket = await connect(api.url, alice.token);
    socket.send({ action: 'watch', run_id: runId });
    await socket.next((frame) => frame.event === 'RunStarted');
    socket.send({ action: 'cancel', run_id: runId });
    expect(await socket.next((frame) => frame.event === 'CancelRequested')).toMatchObject({ data: { run_id: runId } });
    expect(await socket.final(runId, 30_000)).toMatchObject({ event: 'RunCancelled', data: { status: 'cancelled' } });
  });

  it('closes a socket at its next action once its token is revoked, as REST refuses the token at once', async () => {
    const carol = await mintAccount(api.url, ROOT_KEY);
    const socket = await connect(api.url, carol.token);
    const before = await runOver(socket, { component_type: 'agent', component_id: 'echo-agent', message: 'before' });
    expect(before.at(-1)?.event).toBe('RunCompleted');
    const revoked = await call(api.url, 'DELETE', `/service-accounts/${carol.id}`, { token: ROOT_KEY });
    expect(revoked.status, revoked.text).toBeLessThan(300);
    const started = () => socket.frames.filter((frame) => frame.event === 'RunStarted').length;
    const startedBefore = started();
    socket.send({ action: 'run', component_type: 'agent', component_id: 'echo-agent', message: 'after' });
    expect((await socket.closed).code).toBe(1008);
    expect(socket.frames.at(-1)).toEqual({ event: 'auth_error', detail: expect.any(String) });
    expect(started()).toBe(startedBefore);
  });

  it('a run and a watch going stop sending within about a second of a revocation: auth_error, close 1008, no frame of theirs after', async () => {
    const dave = await mintAccount(api.url, ROOT_KEY);
    const posted = await call(api.url, 'POST', '/agents/sleep-agent/runs', { token: dave.token, json: { message: '4', background: true } });
    expect(posted.status, posted.text).toBe(202);
    const socket = await connect(api.url, dave.token);
    socket.send({ action: 'watch', run_id: posted.body.run_id });
    socket.send({ action: 'run', component_type: 'agent', component_id: 'sleep-agent', message: '3' });
    await waitFor(async () => socket.frames.filter((frame) => frame.event === 'RunStarted').length === 2, 15_000, 'both to start');
    const revoked = await call(api.url, 'DELETE', `/service-accounts/${dave.id}`, { token: ROOT_KEY });
    expect(revoked.status, revoked.text).toBeLessThan(300);
    const revokedAt = Date.now();
    // No frame is sent: the socket's own check closes it (the runs end 3-4 s later, past this).
    expect((await socket.closed).code).toBe(1008);
    expect(Date.now() - revokedAt).toBeLessThan(2_500);
    expect(socket.frames.at(-1)).toEqual({ event: 'auth_error', detail: expect.any(String) });
    expect(socket.frames.filter((frame) => FINAL.includes(frame.event))).toEqual([]);
  });

  it('watches at most 16 runs at once on one socket: one more is a 429 frame', async () => {
    // The open instance has no worker, so its background runs stay queued and their watches go on.
    const runIds: string[] = [];
    for (let i = 0; i <= MAX_WATCHES; i += 1) {
      const posted = await call(open.url, 'POST', '/agents/echo-agent/runs', { json: { message: `queued ${i}`, background: true } });
      expect(posted.status, posted.text).toBe(202);
      runIds.push(posted.body.run_id);
    }
    const socket = await connect(open.url);
    runIds.slice(0, MAX_WATCHES).forEach((runId) => socket.send({ action: 'watch', run_id: runId }));
    await waitFor(async () => socket.frames.filter((frame) => frame.event === 'RunStarted').length === MAX_WATCHES, 10_000, 'the watches');
    socket.send({ action: 'watch', run_id: runIds[MAX_WATCHES] });
    expect(await socket.next((frame) => frame.event === 'error', 10_000)).toMatchObject({ status: 429 });
    socket.close();
  });

  it('has at most 16 runs going at once on one socket: one more is a 429 frame, and once one ends another starts', async () => {
    const socket = await connect(api.url, alice.token);
    const started = () => socket.frames.filter((frame) => frame.event === 'RunStarted');
    for (let i = 0; i < MAX_RUNS; i += 1) {
      socket.send({ action: 'run', component_type: 'agent', component_id: 'sleep-agent', message: '60' });
    }
    await waitFor(async () => started().length === MAX_RUNS, 15_000, 'the runs to start');
    socket.send({ action: 'run', component_type: 'agent', component_id: 'sleep-agent', message: '60' });
    expect(await socket.next((frame) => frame.event === 'error', 10_000)).toEqual({
      event: 'error',
      status: 429,
      detail: `This socket already has ${MAX_RUNS} runs going: wait for one to end`,
    });
    expect(started()).toHaveLength(MAX_RUNS);

    const first = started()[0].data!.run_id as string;
    socket.send({ action: 'cancel', run_id: first });
    expect(await socket.final(first)).toMatchObject({ event: 'RunCancelled' });
    const events = await runOver(socket, { component_type: 'agent', component_id: 'echo-agent', message: 'a slot again' });
    expect(events.at(-1)).toMatchObject({ event: 'RunCompleted', data: { content: 'a slot again' } });
    for (const frame of started().slice(1, MAX_RUNS)) {
      socket.send({ action: 'cancel', run_id: frame.data!.run_id });
    }
  });

  it('answers a missing scope with a 403 frame and keeps the socket open', async () => {
    const socket = await connect(api.url, teamsOnly.token);
    socket.send({ action: 'run', component_type: 'agent', component_id: 'echo-agent', message: 'not mine' });
    const refused = await socket.next((frame) => frame.event === 'error');
    expect(refused).toEqual({ event: 'error', status: 403, detail: expect.stringContaining('agents:echo-agent:run') });
    const events = await runOver(socket, { component_type: 'team', component_id: 'echo-team', message: 'still open' });
    expect(events.at(-1)).toMatchObject({ event: 'RunCompleted', data: { content: 'still open' } });
    socket.send({ action: 'launch' });
    expect(await socket.next((frame) => frame.event === 'error' && frame.status === 400)).toMatchObject({
      detail: expect.stringContaining('action'),
    });
  });

  it('closes a socket whose client stops reading once 1 MiB of frames wait for it (1013), instead of buffering without bound', async () => {
    const socket = await connect(api.url, alice.token);
    await socket.next((frame) => frame.event === 'authenticated');
    const tcp = (socket.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    tcp.pause();
    const big = 'x'.repeat(512 * 1024);
    for (let index = 0; index < 40; index += 1) {
      socket.send({ action: 'run', component_type: 'agent', component_id: 'echo-agent', message: big });
    }
    // Let the server run them and fill the kernel's buffers and then its own, then read again.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    tcp.resume();
    const closed = await socket.closed;
    expect(closed).toEqual({ code: 1013, reason: 'Send buffer full: the client reads too slowly' });
    expect(socket.frames.filter((frame) => frame.event === 'RunCompleted').length).toBeLessThan(40);
    // The api's log reaches the test through a pipe, possibly after the close frame.
    await expect.poll(() => api.output()).toContain('closing a WebSocket whose client reads too slowly');
  }, 60_000);

  it('refuses the upgrade from a browser page of another origin (403), on an open instance too; its own and loopback pages connect', async () => {
    const upgrade = (baseUrl: string, origin: string) =>
      new Promise<number>((resolve, reject) => {
        const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/ws`, { origin });
        socket.once('open', () => (socket.close(), resolve(101)));
        socket.once('unexpected-response', (_request, response) => (response.resume(), resolve(response.statusCode ?? 0)));
        socket.once('error', reject);
      });
    for (const baseUrl of [api.url, open.url]) {
      expect(await upgrade(baseUrl, 'https://attacker.example')).toBe(403);
      expect(await upgrade(baseUrl, 'http://localhost:5173')).toBe(101);
      expect(await upgrade(baseUrl, new URL(baseUrl).origin)).toBe(101);
    }
  });

  it('answers a malformed handshake with the standard error body (400), not the ws library’s text/html', async () => {
    const handshake = (headers: Record<string, string>) =>
      new Promise<{ status: number; type?: string; body: string }>((resolve, reject) => {
        // A connection of its own per handshake: a refused upgrade closes it.
        const request = httpRequest(`${api.url}/ws`, {
          agent: false,
          headers: {
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-version': '13',
            'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
            ...headers,
          },
        });
        request.on('response', (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode!, type: response.headers['content-type'], body }));
        });
        request.on('upgrade', (_response, socket) => {
          socket.destroy();
          resolve({ status: 101, body: '' });
        });
        request.on('error', reject);
        request.end();
      });
    for (const [headers, detail] of [
      [{ 'sec-websocket-key': 'short' }, /Sec-WebSocket-Key/],
      [{ 'sec-websocket-version': '7' }, /Sec-WebSocket-Version/],
      [{ 'sec-websocket-protocol': 'a,,b' }, /Sec-WebSocket-Protocol/],
      [{ upgrade: 'h2c' }, /Upgrade/],
    ] as const) {
      const refused = await handshake(headers);
      expect(refused.status, refused.body).toBe(400);
      expect(refused.type).toContain('application/json');
      expect((JSON.parse(refused.body) as { detail: string }).detail).toMatch(detail);
    }
    // Positive control: the same handshake, well formed (a list of subprotocols included), upgrades.
    expect((await handshake({ 'sec-websocket-protocol': 'a, b' })).status).toBe(101);
  });

  it('tells an open socket the api is going away (1001) when the api stops, not a close without a code', async () => {
    const stopping = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY });
    const socket = await SocketClient.open(stopping.url, ROOT_KEY);
    await stopping.stop();
    expect(await socket.closed).toEqual({ code: 1001, reason: 'Server shutting down' });
  });

  it('answers a plain GET with 426', async () => {
    const response = await call(api.url, 'GET', '/ws');
    expectErrorBody(response, 426);
  });

  it('runs echo-agent on 200 concurrent sockets without an error', async () => {
    const many = await Promise.all(Array.from({ length: 200 }, () => connect(api.url, alice.token)));
    const results = await Promise.all(
      many.map((socket, index) => runOver(socket, { component_type: 'agent', component_id: 'echo-agent', message: `socket ${index}` })),
    );
    results.forEach((events, index) =>
      expect(events.at(-1)).toMatchObject({ event: 'RunCompleted', data: { content: `socket ${index}` } }),
    );
    expect(
      many.flatMap((socket) => socket.frames).filter((frame) => FINAL.includes(frame.event) === false && frame.event === 'error'),
    ).toEqual([]);
    many.forEach((socket) => socket.close());
  }, 120_000);
});

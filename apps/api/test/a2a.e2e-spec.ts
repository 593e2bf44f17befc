import { randomUUID } from 'node:crypto';

import { Role, Task, TaskState } from '@a2a-js/sdk';
import { Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { isLegacyAgentCard, LegacyJsonRpcTransport, parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { expectErrorBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { mintAccount, MintedAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

type Binding = 'JSONRPC' | 'HTTP+JSON';

/** The SDK's own client for one component, over one binding, presenting `token` (or nothing). */
async function connect(api: RunningApi, path: string, binding: Binding, token?: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token) {
      headers.set('authorization', `Bearer ${token}`);
    }
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: [binding],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  // The card path resolves against the base like a relative URL: the trailing slash keeps the component segment.
  return factory.createFromUrl(`${api.url}/a2a/${path}/`);
}

function userMessage(text: string, contextId = '') {
  return {
    tenant: '',
    metadata: {},
    configuration: undefined,
    message: {
      messageId: randomUUID() as string,
      contextId,
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text' as const, value: text }, mediaType: 'text/plain', filename: '', metadata: {} }],
      metadata: {},
      extensions: [],
      referenceTaskIds: [],
    },
  };
}

function artifactText(task: Task): string {
  return task.artifacts
    .flatMap((artifact) => artifact.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')))
    .join('');
}

async function send(client: Client, text: string, options: { contextId?: string; returnImmediately?: boolean } = {}): Promise<Task> {
  const result = await client.sendMessage({
    ...userMessage(text, options.contextId),
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: undefined,
      returnImmediately: options.returnImmediately ?? false,
    },
  });
  expect('id' in result, JSON.stringify(result)).toBe(true);
  return result as Task;
}

describe('A2A: agents, teams and workflows over the official SDK client', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let owner: MintedAccount;
  let other: MintedAccount;
  let readOnly: MintedAccount;
  let defaultToken: MintedAccount;

  beforeAll(async () => {
    const env = { DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' };
    api = await startApi(env);
    // Schedule fires call this api.
    worker = await startWorker({ ...env, PUBLIC_URL: api.url, SCHEDULE_TICK_INTERVAL_MS: '200' });
    const all = ['sessions:read', 'agents:read', 'agents:run', 'teams:read', 'teams:run', 'workflows:read', 'workflows:run'];
    owner = await mintAccount(api.url, ROOT_KEY, { scopes: all });
    other = await mintAccount(api.url, ROOT_KEY, { scopes: all });
    readOnly = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:read'] });
    defaultToken = await mintAccount(api.url, ROOT_KEY);
    // An api and a worker: on two shared cores their boots alone have taken over a minute.
  }, 180_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  it('serves an agent card advertising JSON-RPC and HTTP+JSON at the agent URL and the bearer scheme', async () => {
    const response = await call(api.url, 'GET', '/a2a/agents/echo-agent/.well-known/agent-card.json', {
      token: owner.token,
      headers: { 'A2A-Version': '1.0' },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get('vary')).toBe('A2A-Version');
    const url = `${api.url}/a2a/agents/echo-agent`;
    expect(response.body).not.toHaveProperty('url');
    // A version not served gets the v1.0 card too: its interfaces say which versions are.
    for (const version of ['2.0', 'garbage']) {
      const other = await call(api.url, 'GET', '/a2a/agents/echo-agent/.well-known/agent-card.json', {
        token: owner.token,
        headers: { 'A2A-Version': version },
      });
      expect(other.body, version).toEqual(response.body);
    }
    expect(response.body).toMatchObject({
      name: 'Echo agent',
      supportedInterfaces: [
        { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
        // v0.3 JSON-RPC, served at the same URL to a request without an A2A-Version header: every protocol is declared.
        { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
      capabilities: { streaming: true },
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
      // A requirement naming the bearer scheme with no scopes (proto JSON leaves out the empty scope list).
      securityRequirements: [{ schemes: { bearer: {} } }],
    });
  });

  it('serves a v0.3 client, which asks without A2A-Version, the v0.3 card: its url is the JSON-RPC URL it then speaks', async () => {
    const fetchImpl: typeof fetch = (input, init) =>
      fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), authorization: `Bearer ${owner.token}` } });
    const response = await fetchImpl(`${api.url}/a2a/agents/echo-agent/.well-known/agent-card.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('vary')).toBe('A2A-Version');
    const card = (await response.json()) as Record<string, any>;
    const url = `${api.url}/a2a/agents/echo-agent`;
    expect(card).toMatchObject({
      name: 'Echo agent',
      url,
      preferredTransport: 'JSONRPC',
      protocolVersion: '0.3',
      capabilities: { streaming: true, pushNotifications: false },
      supportsAuthenticatedExtendedCard: false,
      securitySchemes: { bearer: { type: 'http', scheme: 'Bearer' } },
      security: [{ bearer: [] }],
      skills: [{ id: 'echo-agent', name: 'Echo agent', tags: ['agent'] }],
      // The v1.0 interfaces stay in it, for a v1.0 client that sent no header.
      supportedInterfaces: [
        { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
        { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
    });
    // The SDK's reading of a v0.3 card (what its v0.3 compatibility takes from one) finds the v0.3 JSON-RPC interface.
    const { supportedInterfaces: _v1, ...v03Only } = card;
    expect(isLegacyAgentCard(v03Only)).toBe(true);
    expect(parseLegacyAgentCard(v03Only).supportedInterfaces).toMatchObject([{ url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' }]);

    // The SDK's v0.3 JSON-RPC client at the card's url: message/send on the wire, the finished task back.
    const transport = new LegacyJsonRpcTransport({ endpoint: card.url, fetchImpl });
    const task = (await transport.sendMessage(userMessage('hello from a v0.3 client'))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task)).toContain('hello from a v0.3 client');
  });

  it('refuses the card without a credential (401), without agents:read (403) and for an unknown agent (404)', async () => {
    expectErrorBody(await call(api.url, 'GET', '/a2a/agents/echo-agent/.well-known/agent-card.json'), 401);
    const forbidden = await call(api.url, 'GET', '/a2a/agents/echo-agent/.well-known/agent-card.json', { token: defaultToken.token });
    expectErrorBody(forbidden, 403);
    expect(forbidden.body.detail).toContain('agents:echo-agent:read');
    expectErrorBody(await call(api.url, 'GET', '/a2a/agents/nobody/.well-known/agent-card.json', { token: owner.token }), 404);
  });

  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    describe(`over ${binding}`, () => {
      let client: Client;
      beforeAll(async () => {
        client = await connect(api, 'agents/echo-agent', binding, owner.token);
      });

      it('answers a message with a completed task that is an ordinary run of the caller', async () => {
        const task = await send(client, `hello over ${binding}`);
        expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        expect(artifactText(task)).toBe(`hello over ${binding}`);
        const run = await call(api.url, 'GET', `/agents/echo-agent/runs/${task.id}`, { token: owner.token });
        expect(run.body).toMatchObject({ run_id: task.id, session_id: task.contextId, status: 'completed', user_id: `sa:${owner.name}` });
        const sessionRuns = await call(api.url, 'GET', `/sessions/${task.contextId}/runs`, { token: owner.token });
        expect(sessionRuns.body.data.map((listed: { run_id: string }) => listed.run_id)).toEqual([task.id]);
      });

      it("shows the client's message under the id the client gave it, answered and read back, sync and queued", async () => {
        for (const returnImmediately of [false, true]) {
          const sent = userMessage(`named ${returnImmediately}`);
          const messageId = `client-${randomUUID()}`;
          sent.message.messageId = messageId;
          const answered = (await client.sendMessage({
            ...sent,
            configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
          })) as Task;
          expect(answered.history[0]).toMatchObject({ messageId, role: Role.ROLE_USER });
          await waitFor(
            async () => (await client.getTask({ id: answered.id, tenant: '' })).history.length === 2,
            30_000,
            'the task to complete',
          );
          const read = await client.getTask({ id: answered.id, tenant: '' });
          expect(read.history.map((message) => message.messageId)).toEqual([messageId, `${answered.id}-content`]);
        }
        // An id past what a run keeps is refused by name, not cut.
        const long = userMessage('long id');
        long.message.messageId = 'm'.repeat(256);
        await expect(client.sendMessage(long)).rejects.toThrow(/messageId must be at most 255 characters/);
      });

      it('continues the session named by contextId', async () => {
        const first = await send(client, 'first');
        const second = await send(client, 'second', { contextId: first.contextId });
        expect(second.contextId).toBe(first.contextId);
        expect(second.id).not.toBe(first.id);
      });

      it('honours historyLength on a send, names an unknown task TaskNotFound, and refuses a message without text as a content type', async () => {
        const full = await send(client, 'with history');
        expect(full.history.length).toBe(2);
        const trimmed = await client.sendMessage({
          ...userMessage('without history'),
          configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false, historyLength: 0 },
        });
        expect((trimmed as Task).history).toEqual([]);
        const continued = userMessage('again');
        for (const taskId of [randomUUID(), 'nope-123']) {
          await expect(client.sendMessage({ ...continued, message: { ...continued.message, taskId } })).rejects.toThrow(/not found/i);
        }
        // A finished task of the caller's own is found, and cannot be continued: tasks finish in one turn.
        await expect(client.sendMessage({ ...continued, message: { ...continued.message, taskId: full.id } })).rejects.toThrow(
          /finish in one turn/,
        );
        const dataOnly = userMessage('');
        dataOnly.message.parts = [
          { content: { $case: 'data', value: { answer: 42 } }, mediaType: 'application/json', filename: '', metadata: {} } as never,
        ];
        await expect(client.sendMessage(dataOnly)).rejects.toThrow(/Only text parts are accepted/);
        // Beside a text part too: refused, not dropped from a task that would then answer without it.
        const withData = userMessage('and a file');
        withData.message.parts.push({
          content: { $case: 'url', value: 'https://example.com/a.pdf' },
          mediaType: 'application/pdf',
          filename: 'a.pdf',
          metadata: {},
        } as never);
        await expect(client.sendMessage(withData)).rejects.toThrow(/Only text parts are accepted/);
      });

      it('answers SubscribeToTask with UnsupportedOperation saying how to follow a task instead (not a bare 404)', async () => {
        const task = await send(client, 'followed');
        const follow = async () => {
          for await (const event of client.resubscribeTask({ id: task.id, tenant: '' })) {
            return event;
          }
          return undefined;
        };
        await expect(follow()).rejects.toThrow(/Poll tasks\/get, or follow the run with the WebSocket watch action/);
      });

      it('answers ListTasks with UnsupportedOperation naming where runs are listed (not a bare 404)', async () => {
        await expect(
          client.listTasks({ tenant: '', contextId: '', pageSize: 10, pageToken: '', historyLength: 0 } as never),
        ).rejects.toThrow(/List the runs of a session with GET \/sessions\/\{session_id\}\/runs/);
      });

      it('streams the run as a task, its content and a final completed status', async () => {
        const events = [];
        for await (const event of client.sendMessageStream(userMessage('streamed'))) {
          events.push(event);
        }
        expect(events[0].payload?.$case).toBe('task');
        const last = events.at(-1)!.payload;
        expect(last?.$case).toBe('statusUpdate');
        expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        const content = events.flatMap((event) =>
          event.payload?.$case === 'artifactUpdate' ? event.payload.value.artifact!.parts.map((part) => part.content?.value) : [],
        );
        expect(content.join('')).toBe('streamed');
        // The artifact is closed: its last piece says so.
        const pieces = events.flatMap((event) => (event.payload?.$case === 'artifactUpdate' ? [event.payload.value] : []));
        expect(pieces.at(-1)?.lastChunk).toBe(true);
        expect(pieces.slice(0, -1).every((piece) => !piece.lastChunk)).toBe(true);
      });

      it('queues a background task on returnImmediately and completes it in the worker, polled with tasks/get', async () => {
        const submitted = await send(client, 'in the background', { returnImmediately: true });
        expect(submitted.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
        let polled = submitted;
        await waitFor(
          async () => {
            polled = await client.getTask({ id: submitted.id, tenant: '', historyLength: undefined });
            return polled.status?.state === TaskState.TASK_STATE_COMPLETED;
          },
          30_000,
          'the background task to complete',
        );
        expect(artifactText(polled)).toBe('in the background');
        const run = await call(api.url, 'GET', `/agents/echo-agent/runs/${submitted.id}`, { token: owner.token });
        expect(run.body).toMatchObject({ background: true, status: 'completed' });
      });

      it('cancels a sleep-agent task', async () => {
        const sleeper = await connect(api, 'agents/sleep-agent', binding, owner.token);
        const submitted = await send(sleeper, '30', { returnImmediately: true });
        await waitFor(
          async () =>
            (await call(api.url, 'GET', `/agents/sleep-agent/runs/${submitted.id}`, { token: owner.token })).body.status === 'running',
          30_000,
          'the worker to start the task',
        );
        const cancelled = await sleeper.cancelTask({ id: submitted.id, tenant: '', metadata: {} });
        expect(cancelled.id).toBe(submitted.id);
        await waitFor(
          async () => (await sleeper.getTask({ id: submitted.id, tenant: '' })).status?.state === TaskState.TASK_STATE_CANCELED,
          30_000,
          'the task to be canceled',
        );
        // Canceled is an end: cancelling it again is TaskNotCancelable, as for a completed or failed task.
        await expect(sleeper.cancelTask({ id: submitted.id, tenant: '', metadata: {} })).rejects.toThrow(/already cancelled/);
      });

      it("keeps a default token's task invisible to another token", async () => {
        const asDefault = await connect(api, 'agents/echo-agent', binding, defaultToken.token).catch(() => null);
        // A default token holds agents:run but not agents:read: it cannot read the card, so it uses the owner's.
        const card = await (await connect(api, 'agents/echo-agent', binding, owner.token)).getAgentCard();
        expect(asDefault).toBeNull();
        const defaultClient = await new ClientFactory({
          transports: [
            new JsonRpcTransportFactory({ fetchImpl: withToken(defaultToken.token) }),
            new RestTransportFactory({ fetchImpl: withToken(defaultToken.token) }),
          ],
          preferredTransports: [binding],
        }).createFromAgentCard(card);
        const task = await send(defaultClient, 'mine');
        const asOther = await connect(api, 'agents/echo-agent', binding, other.token);
        await expect(asOther.getTask({ id: task.id, tenant: '' })).rejects.toThrow(/not found/i);
        await expect(asOther.cancelTask({ id: task.id, tenant: '', metadata: {} })).rejects.toThrow(/not found/i);
      });
    });
  }

  it('answers 401 without a credential and 403 without agents:run, with the standard bodies', async () => {
    const card = await (await connect(api, 'agents/echo-agent', 'JSONRPC', owner.token)).getAgentCard();
    const anonymous = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromAgentCard(card);
    await expect(send(anonymous, 'x')).rejects.toThrow(/401/);
    const narrow = await connect(api, 'agents/echo-agent', 'JSONRPC', readOnly.token);
    await expect(send(narrow, 'x')).rejects.toThrow(/403/);

    const rpc = {
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'x' }] } },
    };
    expectErrorBody(await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: rpc }), 401);
    const refused = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: rpc, token: readOnly.token });
    expectErrorBody(refused, 403);
    expect(refused.body.detail).toContain('agents:echo-agent:run');
    expectErrorBody(await call(api.url, 'POST', '/a2a/agents/echo-agent/message:send', { json: rpc.params, token: readOnly.token }), 403);
    // The same request inside a JSON string: the SDK would parse it, so it is refused without agents:run too,
    // and even with it the SDK is never handed it.
    const wrapped = { contentType: 'application/json', body: JSON.stringify(JSON.stringify(rpc)) };
    const headers = { 'a2a-version': '1.0' };
    expectErrorBody(await call(api.url, 'POST', '/a2a/agents/echo-agent', { raw: wrapped, token: readOnly.token, headers }), 403);
    const malformed = await call(api.url, 'POST', '/a2a/agents/echo-agent', { raw: wrapped, token: owner.token, headers });
    // JSON, but not one request object: JSON-RPC's Invalid Request, in both protocol versions.
    expect(malformed.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    expect(malformed.body.result).toBeUndefined();
    for (const version of [headers, {}]) {
      const batch = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: [rpc], token: owner.token, headers: version });
      expect(batch.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    }
    // A body that is not JSON is JSON-RPC's Parse error, in both protocol versions; over HTTP+JSON the standard 400.
    for (const version of [{ 'a2a-version': '1.0' }, {}] as Record<string, string>[]) {
      const unparsable = await call(api.url, 'POST', '/a2a/agents/echo-agent', {
        raw: { contentType: 'application/json', body: '{"jsonrpc": "2.0", "id": 1,' },
        token: owner.token,
        headers: version,
      });
      expect(unparsable.status, unparsable.text).toBe(200);
      expect(unparsable.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } });
    }
    // JSON refused for a __proto__ key is Invalid Request: it is JSON, so not a Parse error.
    const poisoned = await call(api.url, 'POST', '/a2a/agents/echo-agent', {
      raw: { contentType: 'application/json', body: '{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x","__proto__":{}}}' },
      token: owner.token,
      headers,
    });
    expect(poisoned.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: expect.stringContaining('__proto__') },
    });
    const unparsableRest = { raw: { contentType: 'application/json', body: '{"message":' }, token: owner.token, headers };
    expectErrorBody(await call(api.url, 'POST', '/a2a/agents/echo-agent/message:send', unparsableRest), 400);
    // A NUL in the text is refused by name, as REST refuses it, not a database error.
    const nul = { ...rpc, params: { message: { messageId: 'm2', role: 'ROLE_USER', parts: [{ text: 'a\u0000b' }] } } };
    const refusedNul = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: nul, token: owner.token, headers });
    expect(refusedNul.body).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: expect.stringContaining('NUL') } });
    const half = {
      ...rpc,
      params: {
        message: { messageId: 'm3', role: 'ROLE_USER', parts: [{ text: 'hi \ud83d' }] },
        configuration: { returnImmediately: true },
      },
    };
    const refusedHalf = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: half, token: owner.token, headers });
    expect(refusedHalf.body).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: expect.stringContaining('surrogate') },
    });
    // Text and message ids of another JSON type are refused, not run as "123" or "[object Object]" (both bindings).
    for (const [parts, messageId, detail] of [
      [[{ text: { a: 1 } }], 'm4', "A text part's text must be a string"],
      [[{ text: 'ok' }, { text: 123 }], 'm5', "A text part's text must be a string"],
      [[{ text: 'ok' }], 6, 'message.messageId must be a string'],
    ] as const) {
      const message = { messageId, role: 'ROLE_USER', parts };
      const refusedRpc = await call(api.url, 'POST', '/a2a/agents/echo-agent', {
        json: { ...rpc, params: { message } },
        token: owner.token,
        headers,
      });
      expect(refusedRpc.body, JSON.stringify(parts)).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: detail } });
      const refusedRest = await call(api.url, 'POST', '/a2a/agents/echo-agent/message:send', {
        json: { message },
        token: owner.token,
        headers,
      });
      expect(refusedRest.status, JSON.stringify(parts)).toBe(400);
      expect(JSON.stringify(refusedRest.body), JSON.stringify(parts)).toContain(detail);
    }
    const v03Object = {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'm7', role: 'user', parts: [{ kind: 'text', text: { a: 1 } }] } },
    };
    const refusedV03 = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: v03Object, token: owner.token });
    expect(refusedV03.body).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: "A text part's text must be a string" },
    });
    // A method the scope map does not name needs agents:run.
    const unnamed = { ...rpc, method: 'NoSuchMethod' };
    expectErrorBody(await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: unnamed, token: readOnly.token, headers }), 403);
    // No request at all (no jsonrpc 2.0, no method, an id JSON-RPC does not allow, a notification: every A2A method
    // answers) is Invalid Request, echoing only an id JSON-RPC allows; a null message part is Invalid params.
    for (const version of [headers, {}]) {
      for (const [json, id] of [
        [{ id: 1, method: 'GetTask', params: { id: 'x' } }, 1],
        [{ jsonrpc: '1.0', id: 1, method: 'GetTask', params: { id: 'x' } }, 1],
        [{ jsonrpc: '2.0', id: 1, method: 5 }, 1],
        [{ jsonrpc: '2.0', id: { a: 1 }, method: 'GetTask', params: { id: 'x' } }, null],
        [{ jsonrpc: '2.0', id: 1.5, method: 'GetTask', params: { id: 'x' } }, null],
        [{ jsonrpc: rpc.jsonrpc, method: rpc.method, params: rpc.params }, null],
      ] as const) {
        const answer = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json, token: owner.token, headers: version });
        expect(answer.body, JSON.stringify(json)).toEqual({
          jsonrpc: '2.0',
          id,
          error: { code: -32600, message: expect.stringMatching(/^Invalid Request: /) },
        });
      }
    }
    for (const method of ['SendMessage', 'SendStreamingMessage']) {
      const nullPart = { ...rpc, method, params: { message: { ...rpc.params.message, parts: [null] } } };
      const answer = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: nullPart, token: owner.token, headers });
      expect(answer.body, method).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Each part must be an object' } });
    }
    // A method the version does not define is Method not found, with params or without (the SDK checks params first);
    // a defined one without params is still Invalid params.
    for (const [version, known] of [
      [headers, 'GetTask'],
      [{}, 'tasks/get'],
    ] as const) {
      for (const request of [
        { jsonrpc: '2.0', id: 7, method: 'NoSuchMethod' },
        unnamed,
        { ...unnamed, method: version === headers ? 'tasks/get' : 'GetTask' },
      ]) {
        const answer = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: request, token: owner.token, headers: version });
        expect(answer.body, JSON.stringify(request)).toMatchObject({ jsonrpc: '2.0', id: request.id, error: { code: -32601 } });
      }
      const paramless = await call(api.url, 'POST', '/a2a/agents/echo-agent', {
        json: { jsonrpc: '2.0', id: 8, method: known },
        token: owner.token,
        headers: version,
      });
      expect(paramless.body).toMatchObject({ jsonrpc: '2.0', id: 8, error: { code: -32602 } });
    }
    // Reading a task needs agents:read only.
    const getTask = { jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: randomUUID() } };
    const unknown = await call(api.url, 'POST', '/a2a/agents/echo-agent', {
      json: getTask,
      token: readOnly.token,
      headers: { 'a2a-version': '1.0' },
    });
    expect(unknown.status).toBe(200);
    expect(unknown.body).toMatchObject({ jsonrpc: '2.0', id: 2, error: { code: -32001 } });
    // Bad params are invalid params (as the HTTP+JSON binding's 400), not a task not found; a full version number is its
    // Major.Minor. (A numeric string such as "2" is a valid int32 in protobuf's JSON, so it is taken.)
    for (const params of [{}, { id: randomUUID(), historyLength: -1 }, { id: randomUUID(), historyLength: 1.5 }]) {
      const bad = await call(api.url, 'POST', '/a2a/agents/echo-agent', {
        json: { ...getTask, params },
        token: owner.token,
        headers: { 'a2a-version': '1.0.0' },
      });
      expect(bad.body, JSON.stringify(params)).toMatchObject({ jsonrpc: '2.0', id: 2, error: { code: -32602 } });
    }
  });

  it("answers the HTTP+JSON methods it does not offer with the protocol's error, under their JSON-RPC twins' scopes", async () => {
    const headers = { 'a2a-version': '1.0' };
    const task = randomUUID();
    const refusals = [
      // The card says capabilities.extendedAgentCard: false, for which the protocol's answer is UnsupportedOperation.
      { method: 'GET', path: 'extendedAgentCard', message: /no extended card/, status: 'UNSUPPORTED_OPERATION' },
      // SubscribeToTask only follows a task: a read, by POST and by GET (as the SDK's own server takes it).
      { method: 'POST', path: `tasks/${task}:subscribe`, message: /Poll tasks\/get/, status: 'UNSUPPORTED_OPERATION' },
      { method: 'GET', path: `tasks/${task}:subscribe`, message: /Poll tasks\/get/, status: 'UNSUPPORTED_OPERATION' },
      { method: 'GET', path: 'tasks', message: /GET \/sessions\/\{session_id\}\/runs/ },
      { method: 'GET', path: `tasks/${task}/pushNotificationConfigs`, message: /[Pp]ush [Nn]otification/ },
      { method: 'GET', path: `tasks/${task}/pushNotificationConfigs/c1`, message: /[Pp]ush [Nn]otification/ },
      { method: 'POST', path: `tasks/${task}/pushNotificationConfigs`, message: /[Pp]ush [Nn]otification/, run: true },
      { method: 'DELETE', path: `tasks/${task}/pushNotificationConfigs/c1`, message: /[Pp]ush [Nn]otification/, run: true },
    ];
    for (const { method, path, message, run, status } of refusals) {
      const url = `/a2a/agents/echo-agent/${path}`;
      const json = method === 'POST' ? { url: 'https://example.com/hook' } : undefined;
      const refused = await call(api.url, method, url, { token: owner.token, headers, json });
      // The binding answers these errors 400 (its status table), with A2A's error object.
      expect(refused.status, `${method} ${path}: ${refused.text}`).toBe(400);
      expect(refused.headers.get('content-type')).toContain('application/a2a+json');
      expect(refused.body.error.message, `${method} ${path}`).toMatch(message);
      if (status) {
        expect(refused.body.error.details[0].reason, `${method} ${path}`).toBe(status);
      }
      expectErrorBody(await call(api.url, method, url, { headers, json }), 401);
      // The methods that would change something need agents:run, as their JSON-RPC twins do.
      const narrow = await call(api.url, method, url, { token: readOnly.token, headers, json });
      if (run) {
        expectErrorBody(narrow, 403);
      } else {
        expect(narrow.body.error.message, `${method} ${path} with agents:read`).toMatch(message);
      }
      expectErrorBody(await call(api.url, method, url.replace('echo-agent', 'no-such-agent'), { token: owner.token, headers, json }), 404);
    }
    // JSON-RPC answers the same, under the same scopes: SubscribeToTask and the extended card are reads.
    for (const method of ['SubscribeToTask', 'GetExtendedAgentCard']) {
      const refused = await call(api.url, 'POST', '/a2a/agents/echo-agent', {
        json: { jsonrpc: '2.0', id: 3, method, params: { id: task } },
        token: readOnly.token,
        headers,
      });
      expect(refused.body, method).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32004 } });
    }
    // Cancelling is a run: a read-only token is refused.
    expectErrorBody(await call(api.url, 'POST', `/a2a/agents/echo-agent/tasks/${task}:cancel`, { token: readOnly.token, headers }), 403);
  });

  it('accepts requests sent as application/a2a+json, and still refuses them without agents:run', async () => {
    const rpc = {
      jsonrpc: '2.0',
      id: 3,
      method: 'SendMessage',
      params: { message: { messageId: 'm3', role: 'ROLE_USER', parts: [{ text: 'typed' }] } },
    };
    const raw = { contentType: 'application/a2a+json', body: JSON.stringify(rpc) };
    const sent = await call(api.url, 'POST', '/a2a/agents/echo-agent', { raw, token: owner.token, headers: { 'a2a-version': '1.0' } });
    expect(sent.status, sent.text).toBe(200);
    expect(JSON.stringify(sent.body.result)).toContain('typed');
    expectErrorBody(await call(api.url, 'POST', '/a2a/agents/echo-agent', { raw, token: readOnly.token }), 403);
  });

  // 16 s: a stream quiet for longer than the 15 s keepalive period, over REST and A2A at once.
  it('keeps a quiet stream alive with an SSE comment every 15 s, over REST stream=true and A2A message:stream alike', async () => {
    const bodyOf = async (path: string, body: unknown) => {
      const response = await fetch(`${api.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify(body),
      });
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      return response.text();
    };
    const [rest, a2a] = await Promise.all([
      bodyOf('/agents/sleep-agent/runs', { message: '16', stream: true }),
      bodyOf('/a2a/agents/sleep-agent', {
        jsonrpc: '2.0',
        id: 9,
        method: 'message/stream',
        params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: '16' }] } },
      }),
    ]);
    for (const body of [rest, a2a]) {
      expect(body).toContain('\n: keepalive\n\n');
      // Between the run's first and last events, never after the end.
      expect(body.indexOf(': keepalive')).toBeLessThan(body.lastIndexOf('data:'));
    }
    expect(rest).toContain('event: RunCompleted');
    expect(a2a).toContain('"completed"');
  }, 40_000);

  it('speaks v0.3 JSON-RPC too (message/send, tasks/get, message/stream without an A2A-Version header), under the same scopes', async () => {
    const rpc = (method: string, params: unknown, token?: string) =>
      call(api.url, 'POST', '/a2a/agents/echo-agent', { json: { jsonrpc: '2.0', id: 7, method, params }, token });
    const message = (text: string) => ({
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }] },
    });

    // A schedule may call it only with a body a fire can send: a v0.3 request with an id, answered once.
    const schedule = (payload: unknown) =>
      call(api.url, 'POST', '/schedules', {
        token: ROOT_KEY,
        json: {
          name: `a2a-${randomUUID().slice(0, 8)}`,
          cron_expr: '0 0 1 1 *',
          method: 'POST',
          endpoint: '/a2a/agents/echo-agent',
          payload,
        },
      });
    for (const [payload, why] of [
      [{ jsonrpc: '1.0', id: 1, method: 'message/send', params: message('x') }, 'jsonrpc must be "2.0"'],
      [{ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: message('x') }, 'speaks A2A v0.3'],
      [{ jsonrpc: '2.0', id: 1, method: 'message/stream', params: message('x') }, 'not a stream'],
    ] as const) {
      const refused = await schedule(payload);
      expect(refused.status, JSON.stringify(payload)).toBe(422);
      expect(refused.body.detail[0], JSON.stringify(payload)).toMatchObject({
        type: 'unschedulable_route',
        msg: expect.stringContaining(why),
      });
    }
    expect((await schedule({ jsonrpc: '2.0', id: 1, method: 'message/send', params: message('x') })).status).toBe(201);
    // A body without an id, as schedules were stored before callers were held to one, still fires and reads its
    // answer; a caller sending the same is refused (a notification gets no answer).
    const idless = { jsonrpc: '2.0', method: 'message/send', params: message('scheduled without an id') };
    const stored = await schedule(idless);
    expect(stored.status, stored.text).toBe(201);
    const direct = await call(api.url, 'POST', '/a2a/agents/echo-agent', { json: idless, token: owner.token });
    expect(direct.body).toMatchObject({ id: null, error: { code: -32600 } });
    expect((await call(api.url, 'POST', `/schedules/${stored.body.id}/trigger`, { token: ROOT_KEY })).status).toBe(202);
    let fire: { status: string; status_code: number | null; error: string | null } | undefined;
    await waitFor(
      async () =>
        ['success', 'failed'].includes(
          (fire = (await call(api.url, 'GET', `/schedules/${stored.body.id}/runs`, { token: ROOT_KEY })).body.data[0])?.status ?? '',
        ),
      20_000,
      'the fire to finish',
    );
    expect(fire).toMatchObject({ status: 'success', status_code: 200, error: null });
    expect((await call(api.url, 'GET', `/schedules/${stored.body.id}`, { token: ROOT_KEY })).body).toMatchObject({ enabled: true });

    const sent = await rpc('message/send', message('hello in v0.3'), owner.token);
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { kind: 'task', status: { state: 'completed' } } });
    expect(JSON.stringify(sent.body.result.artifacts)).toContain('hello in v0.3');
    const taskId: string = sent.body.result.id;
    // An ordinary run of the caller, visible over REST.
    expect((await call(api.url, 'GET', `/agents/echo-agent/runs/${taskId}`, { token: owner.token })).body).toMatchObject({
      status: 'completed',
    });

    // A configuration without `blocking` still waits for the task, as no configuration does.
    const configured = await rpc('message/send', { ...message('configured'), configuration: { historyLength: 0 } }, owner.token);
    expect(configured.body).toMatchObject({ result: { kind: 'task', status: { state: 'completed' } } });

    const read = await rpc('tasks/get', { id: taskId }, readOnly.token);
    expect(read.body).toMatchObject({ id: 7, error: { code: -32001 } }); // agents:read may read, but not another principal's task
    expect((await rpc('tasks/get', { id: taskId }, owner.token)).body).toMatchObject({
      result: { id: taskId, status: { state: 'completed' } },
    });

    const stream = await fetch(`${api.url}/a2a/agents/echo-agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'message/stream', params: message('streamed in v0.3') }),
    });
    const events = (await stream.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)).result);
    expect(events.at(-1)).toMatchObject({ kind: 'status-update', final: true, status: { state: 'completed' } });
    expect(JSON.stringify(events)).toContain('streamed in v0.3');

    // Push notifications are not supported, in v0.3 as in v1.0: the protocol's error, not an internal one.
    for (const params of [{}, { taskId: taskId, pushNotificationConfig: { url: 'https://example.com/hook' } }]) {
      const push = await rpc('tasks/pushNotificationConfig/set', params, owner.token);
      expect(push.body, push.text).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32003 } });
    }

    // The scopes follow the method as in v1.0: sending needs agents:run, a read-only token is refused (403).
    expectErrorBody(await rpc('message/send', message('x'), readOnly.token), 403);
    expectErrorBody(await rpc('message/send', message('x')), 401);
  });

  it('serves teams like agents, and workflows with card, send and stream only', async () => {
    const team = await connect(api, 'teams/echo-team', 'JSONRPC', owner.token);
    expect(artifactText(await send(team, 'team'))).toBe('team');
    const workflow = await connect(api, 'workflows/echo-workflow', 'HTTP+JSON', owner.token);
    const task = await send(workflow, 'flow');
    expect(artifactText(task)).toBe('flow');
    // A workflow has no tasks to read back: the protocol's error on both bindings (not a 404), under the same scopes.
    await expect(workflow.getTask({ id: task.id, tenant: '' })).rejects.toThrow(/answers message\/send and message\/stream only/);
    const headers = { 'a2a-version': '1.0' };
    const workflowOnly = /A workflow answers message\/send and message\/stream only/;
    for (const [method, path, message] of [
      ['GET', `tasks/${task.id}`, workflowOnly],
      ['POST', `tasks/${task.id}:cancel`, workflowOnly],
      ['GET', 'tasks', /GET \/sessions\/\{session_id\}\/runs/],
      ['POST', `tasks/${task.id}:subscribe`, workflowOnly],
      ['GET', `tasks/${task.id}:subscribe`, workflowOnly],
    ] as const) {
      const refused = await call(api.url, method, `/a2a/workflows/echo-workflow/${path}`, { token: owner.token, headers });
      expect(refused.status, `${method} ${path}: ${refused.text}`).toBe(400);
      expect(refused.body.error.details[0].reason, `${method} ${path}`).toBe('UNSUPPORTED_OPERATION');
      // What to do instead: never a method this workflow refuses too.
      expect(refused.body.error.message, `${method} ${path}`).toMatch(message);
    }
    const rpcSubscribe = await call(api.url, 'POST', '/a2a/workflows/echo-workflow', {
      json: { jsonrpc: '2.0', id: 5, method: 'SubscribeToTask', params: { id: task.id } },
      token: owner.token,
      headers: { ...headers, accept: 'text/event-stream' },
    });
    expect(rpcSubscribe.text).toMatch(workflowOnly);
    const rpcGet = await call(api.url, 'POST', '/a2a/workflows/echo-workflow', {
      json: { jsonrpc: '2.0', id: 4, method: 'GetTask', params: { id: task.id } },
      token: owner.token,
      headers,
    });
    expect(rpcGet.body).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32004 } });
    // So a send that asks to return at once waits for the workflow instead: a submitted task could never be followed.
    const immediate = await workflow.sendMessage({
      ...userMessage('at once'),
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true, historyLength: 0 },
    });
    expect((immediate as Task).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});

function withToken(token: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

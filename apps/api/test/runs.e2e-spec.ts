import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { expectErrorBody, expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { callTool, connectMcp } from '../../../test/support/mcp';
import { mintAccount, MintedAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';

/** A form-encoded POST, the spec's wire format for run requests. */
function form(fields: Record<string, string>): { raw: { body: string; contentType: string } } {
  return { raw: { body: new URLSearchParams(fields).toString(), contentType: 'application/x-www-form-urlencoded' } };
}

function parseEvents(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .trim()
    .split('\n\n')
    .map((block) => {
      const [eventLine, dataLine] = block.split('\n');
      return { event: eventLine.replace('event: ', ''), data: JSON.parse(dataLine.replace('data: ', '')) };
    });
}

describe('runs and sessions (security_key mode, demo components)', () => {
  let api: RunningApi;
  let databaseUrl: string;
  let alice: MintedAccount;
  let bob: MintedAccount;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', MCP_ENABLED: 'true' });
    alice = await mintAccount(api.url, ROOT_KEY);
    bob = await mintAccount(api.url, ROOT_KEY);
  });
  afterAll(() => api?.stop());

  describe('components', () => {
    it('lists the demo agents, teams and workflows with their fixed ids', async () => {
      const agents = await call(api.url, 'GET', '/agents', { token: ROOT_KEY });
      expect(agents.status).toBe(200);
      expect(agents.body.map((agent: { id: string }) => agent.id)).toEqual(['echo-agent', 'sleep-agent', 'fail-agent']);
      expect((await call(api.url, 'GET', '/teams', { token: ROOT_KEY })).body.map((team: { id: string }) => team.id)).toEqual([
        'echo-team',
      ]);
      expect((await call(api.url, 'GET', '/workflows', { token: ROOT_KEY })).body.map((flow: { id: string }) => flow.id)).toEqual([
        'echo-workflow',
      ]);
      const one = await call(api.url, 'GET', '/agents/echo-agent', { token: ROOT_KEY });
      expect(one.body).toEqual({ id: 'echo-agent', type: 'agent', name: 'Echo agent', description: expect.any(String) });
    });

    it('answers 404 for an unknown component', async () => {
      const response = await call(api.url, 'POST', '/agents/nobody/runs', { token: ROOT_KEY, ...form({ message: 'hi' }) });
      expectErrorBody(response, 404);
      expect(response.body.detail).toBe("Agent 'nobody' not found");
    });

    it('answers 404, not a 403 for a scope no one can hold, when the id is not one a component can have', async () => {
      const narrow = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:echo-agent:run'] });
      for (const id of ['echo-agent:run', 'echo%20agent']) {
        const response = await call(api.url, 'POST', `/agents/${id}/runs`, { token: alice.token, json: { message: 'hi' } });
        expectErrorBody(response, 404);
        expect(response.body.detail).toBe(`Agent '${decodeURIComponent(id)}' not found`);
        // A token for one component holds nothing this id could need: refused, naming the scope that would do.
        const refused = await call(api.url, 'POST', `/agents/${id}/runs`, { token: narrow.token, json: { message: 'hi' } });
        expectErrorBody(refused, 403);
        expect(refused.body.detail).toBe('Insufficient permissions. Required scope(s): agents:run');
      }
    });

    it('needs agents:read to list (default service-account scopes do not include it)', async () => {
      const refused = await call(api.url, 'GET', '/agents', { token: alice.token });
      expectErrorBody(refused, 403);
      expect(refused.body.detail).toBe('Insufficient permissions. Required scope(s): agents:read');
    });

    it('lists to a token with grants for some components those components only (over REST and MCP)', async () => {
      const some = await mintAccount(api.url, ROOT_KEY, {
        scopes: ['agents:echo-agent:read', 'agents:fail-agent:read', 'teams:echo-team:run'],
      });
      const listed = await call(api.url, 'GET', '/agents', { token: some.token });
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body.map((agent: { id: string }) => agent.id)).toEqual(['echo-agent', 'fail-agent']);
      // A grant of another action, or of another resource, lists nothing: still the scope's 403.
      expectErrorBody(await call(api.url, 'GET', '/teams', { token: some.token }), 403);
      expectErrorBody(await call(api.url, 'GET', '/workflows', { token: some.token }), 403);
      const client = await connectMcp(api.url, some.token);
      try {
        const tools = (await client.listTools()).tools.map((tool) => tool.name);
        expect(tools).toContain('list_agents');
        expect(tools).not.toContain('list_teams');
        const result = await callTool(client, 'list_agents', {});
        expect(result.isError, result.text).toBe(false);
        expect(JSON.parse(result.text).data.map((agent: { id: string }) => agent.id)).toEqual(['echo-agent', 'fail-agent']);
      } finally {
        await client.close();
      }
    });
  });

  describe('synchronous runs', () => {
    it('runs echo-agent from a form-encoded body and answers 200 with the finished run', async () => {
      const response = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        ...form({ message: 'hello', stream: 'false' }),
      });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({
        run_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        session_id: expect.any(String),
        component_type: 'agent',
        component_id: 'echo-agent',
        user_id: `sa:${alice.name}`,
        status: 'completed',
        message: 'hello',
        content: 'hello',
        error: null,
        background: false,
        model: null,
        input_tokens: null,
        output_tokens: null,
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
        completed_at: expect.any(Number),
      });
      const fetched = await call(api.url, 'GET', `/agents/echo-agent/runs/${response.body.run_id}`, { token: alice.token });
      expect(fetched.body).toEqual(response.body);
    });

    it('reads a blank form field as not given, as forms mean it; in JSON an empty string is still refused', async () => {
      const blanks = { message: 'blank fields', session_id: '', user_id: '', idempotency_key: '', stream: '', background: '' };
      const first = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, ...form(blanks) });
      const second = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, ...form(blanks) });
      expect(first.status, first.text).toBe(200);
      expect(first.body).toMatchObject({ status: 'completed', user_id: null, background: false });
      // Two runs, each in a new session: no blank key deduplicated them, no blank session joined them.
      expect(second.body.run_id).not.toBe(first.body.run_id);
      expect(second.body.session_id).not.toBe(first.body.session_id);
      expect(
        expectValidationBody(await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, ...form({ message: '' }) })),
      ).toEqual([['body', 'message']]);
      // In JSON an empty string is a value, and none of these takes one: not a user named '', nor one key for every run.
      const json = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: ROOT_KEY,
        json: { message: 'x', session_id: '', user_id: '', idempotency_key: '' },
      });
      expect(expectValidationBody(json)).toEqual([
        ['body', 'session_id'],
        ['body', 'user_id'],
        ['body', 'idempotency_key'],
      ]);
      // JSON sent without its Content-Type (curl -d's default is a form) is said to be that, not "Field required".
      for (const path of ['/agents/echo-agent/runs', '/memories']) {
        const asForm = await call(api.url, 'POST', path, {
          token: ROOT_KEY,
          raw: { contentType: 'application/x-www-form-urlencoded', body: '{"message": "hi", "memory": "likes tea"}' },
        });
        expect(asForm.status, path).toBe(415);
        expect(asForm.body.detail).toMatch(/^The body is JSON sent as a form .*Content-Type: application\/json/);
      }
      // An empty Idempotency-Key header is no key: two runs, not the first one twice.
      const headers = { 'idempotency-key': '' };
      const keyless = [
        await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'one' }, headers }),
        await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'two' }, headers }),
      ];
      expect(keyless.map((answer) => answer.body.content)).toEqual(['one', 'two']);
    });

    it('takes the form fields as multipart/form-data too; refuses files (413) and a malformed body (400); other routes answer it with 415', async () => {
      const post = (path: string, body: FormData | string, headers: Record<string, string> = {}) =>
        fetch(`${api.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${alice.token}`, ...headers }, body });
      const fields = (entries: Record<string, string | Blob>) => {
        const data = new FormData();
        Object.entries(entries).forEach(([name, value]) => data.set(name, value));
        return data;
      };
      const sync = await post('/agents/echo-agent/runs', fields({ message: 'multipart hello', stream: 'false' }));
      expect(sync.status).toBe(200);
      expect(await sync.json()).toMatchObject({ status: 'completed', content: 'multipart hello', user_id: `sa:${alice.name}` });
      const queued = await post('/teams/echo-team/runs', fields({ message: 'later', background: 'true' }));
      expect(queued.status).toBe(202);
      expect(await queued.json()).toMatchObject({ status: 'queued' });

      const withFile = await post('/agents/echo-agent/runs', fields({ message: 'x', doc: new Blob(['data']) }));
      expect([withFile.status, await withFile.json()]).toEqual([415, { detail: 'Files are not accepted: send the form fields only' }]);
      const malformed = await post('/agents/echo-agent/runs', 'not multipart', { 'content-type': 'multipart/form-data; boundary=x' });
      expect(malformed.status).toBe(400);
      expect(((await malformed.json()) as { detail: string }).detail).toMatch(/^Malformed multipart body/);
      // Never taken shortened: one field over the body limit, or fields over it in all, are a 413 like a JSON body.
      const huge = 'x'.repeat(1024 * 1024 + 1);
      expect((await post('/agents/echo-agent/runs', fields({ message: huge }))).status).toBe(413);
      const many = fields(Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`f${i}`, 'y'.repeat(400 * 1024)])));
      many.set('message', 'hi');
      expect((await post('/agents/echo-agent/runs', many)).status).toBe(413);
      const missing = await post('/agents/echo-agent/runs', fields({ stream: 'true' }));
      expect(missing.status).toBe(422);
      const elsewhere = await post('/memories', fields({ memory: 'x' }));
      expect([elsewhere.status, await elsewhere.json()]).toEqual([415, { detail: 'Unsupported Content-Type: send application/json' }]);
      // Urlencoded too: only the run routes take forms, as the API document says; nothing is made from one.
      const urlencoded = { 'content-type': 'application/x-www-form-urlencoded' };
      for (const [path, body] of [
        ['/memories', 'memory=x'],
        ['/service-accounts', 'name=from-a-form&scopes=agents:run'],
        ['/schedules', 'name=from-a-form&cron=0+*+*+*+*&endpoint=/agents/echo-agent/runs'],
      ]) {
        const form = await fetch(`${api.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ROOT_KEY}`, ...urlencoded },
          body,
        });
        expect([form.status, await form.json()], path).toEqual([415, { detail: 'Unsupported Content-Type: send application/json' }]);
      }
      // An action that takes no body refuses a form with fields too, but an empty form is no body: the action answers.
      const action = `/queue/jobs/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}/requeue`;
      const requeue = (body: string) =>
        fetch(`${api.url}${action}`, { method: 'POST', headers: { authorization: `Bearer ${ROOT_KEY}`, ...urlencoded }, body });
      const withFields = await requeue('force=true');
      expect([withFields.status, await withFields.json()]).toEqual([415, { detail: 'Unsupported Content-Type: send application/json' }]);
      expect((await requeue('')).status).toBe(404);
      // A route that does not exist is still a 404, form or not.
      const nowhere = await fetch(`${api.url}/nowhere`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ROOT_KEY}`, ...urlencoded },
        body: 'a=1',
      });
      expect(nowhere.status).toBe(404);
      const accounts = await call<{ data: { name: string }[] }>(api.url, 'GET', '/service-accounts?limit=100', {
        token: ROOT_KEY,
      });
      expect(accounts.body.data.map((account) => account.name)).not.toContain('from-a-form');
    });

    it('accepts JSON too, and runs teams and workflows the same way', async () => {
      for (const path of ['/agents/echo-agent', '/teams/echo-team', '/workflows/echo-workflow']) {
        const response = await call(api.url, 'POST', `${path}/runs`, { token: alice.token, json: { message: `via ${path}` } });
        expect(response.status, response.text).toBe(200);
        expect(response.body).toMatchObject({ status: 'completed', content: `via ${path}` });
      }
    });

    it('records fail-agent as failed with its error message', async () => {
      const response = await call(api.url, 'POST', '/agents/fail-agent/runs', { token: alice.token, ...form({ message: 'x' }) });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ status: 'failed', content: null, error: 'fail-agent always fails' });
    });

    it('streams run events as text/event-stream with stream=true', async () => {
      const response = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        ...form({ message: 'streamed', stream: 'true' }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      const events = parseEvents(response.text);
      expect(events.map((event) => event.event)).toEqual(['RunStarted', 'RunContent', 'RunCompleted']);
      expect(events[1].data).toEqual({ run_id: events[0].data.run_id, content: 'streamed' });
      expect(events[2].data).toMatchObject({ run_id: events[0].data.run_id, status: 'completed', content: 'streamed' });
    });

    it('stops a running sleep-agent at its next checkpoint when cancelled', async () => {
      const sessionId = `cancel-${Date.now()}`;
      const running = call(api.url, 'POST', '/agents/sleep-agent/runs', {
        token: alice.token,
        ...form({ message: '20', session_id: sessionId }),
      });
      let runId = '';
      await expect
        .poll(async () => {
          const runs = await call(api.url, 'GET', `/sessions/${sessionId}/runs`, { token: ROOT_KEY });
          runId = runs.body.data?.[0]?.run_id ?? '';
          return runs.body.data?.[0]?.status;
        })
        .toBe('running');
      const cancel = await call(api.url, 'POST', `/agents/sleep-agent/runs/${runId}/cancel`, { token: alice.token });
      expect(cancel.status).toBe(200);
      const finished = await running;
      expect(finished.body).toMatchObject({ run_id: runId, status: 'cancelled', error: 'Run was cancelled' });
    });
  });

  describe('background runs', () => {
    it('stores the run and a queued job with the same id in one go, and answers 202', async () => {
      const response = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        ...form({ message: 'later', background: 'true' }),
      });
      expect(response.status, response.text).toBe(202);
      expect(response.body).toEqual({ run_id: expect.any(String), session_id: expect.any(String), status: 'queued' });
      const [job] = await query(databaseUrl, 'SELECT * FROM queue_jobs WHERE id = $1', [response.body.run_id]);
      expect(job).toMatchObject({
        job_type: 'run',
        component_type: 'agent',
        component_id: 'echo-agent',
        session_id: response.body.session_id,
        user_id: `sa:${alice.name}`,
        payload: { message: 'later' },
        status: 'queued',
        attempt: 0,
        max_attempts: 1,
        locked_by: null,
      });
      const run = await call(api.url, 'GET', `/agents/echo-agent/runs/${response.body.run_id}`, { token: alice.token });
      expect(run.body).toMatchObject({ status: 'queued', background: true, content: null, completed_at: null });
    });

    it('cancels a queued run at once, job included', async () => {
      const queued = await call(api.url, 'POST', '/agents/sleep-agent/runs', {
        token: alice.token,
        json: { message: '1', background: true },
      });
      const cancel = await call(api.url, 'POST', `/agents/sleep-agent/runs/${queued.body.run_id}/cancel`, { token: alice.token });
      expect(cancel.status).toBe(200);
      expect(cancel.body).toMatchObject({ status: 'cancelled', completed_at: expect.any(Number) });
      const [job] = await query(databaseUrl, 'SELECT status, completed_at, attempt FROM queue_jobs WHERE id = $1', [queued.body.run_id]);
      expect(job).toMatchObject({ status: 'cancelled', completed_at: expect.any(Date), attempt: 0 });
      const intents = await query(databaseUrl, 'SELECT requested_by FROM queue_cancellation_intents WHERE run_id = $1', [
        queued.body.run_id,
      ]);
      expect(intents).toEqual([{ requested_by: `sa:${alice.name}` }]);
    });

    it('returns the earlier run for a repeated Idempotency-Key, 409 for another component, 422 beyond 512 characters', async () => {
      const key = `key-${Date.now()}`;
      const first = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        headers: { 'idempotency-key': key },
        json: { message: 'once', background: true },
      });
      const again = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        headers: { 'idempotency-key': key },
        json: { message: 'once', background: true },
      });
      expect(again.status).toBe(202);
      expect(again.body).toEqual(first.body);
      expect(await query(databaseUrl, 'SELECT id FROM queue_jobs WHERE idempotency_key = $1', [key])).toHaveLength(1);
      // Keys are per caller: bob's identical key is his own run.
      const bobs = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: bob.token,
        json: { message: 'once', background: true, idempotency_key: key },
      });
      expect(bobs.body.run_id).not.toBe(first.body.run_id);
      const elsewhere = await call(api.url, 'POST', '/teams/echo-team/runs', {
        token: alice.token,
        headers: { 'idempotency-key': key },
        json: { message: 'once', background: true },
      });
      expectErrorBody(elsewhere, 409);
      const tooLong = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        headers: { 'idempotency-key': 'k'.repeat(513) },
        json: { message: 'x' },
      });
      expect(expectValidationBody(tooLong)).toEqual([['header', 'idempotency-key']]);
    });

    it('answers concurrent requests with the same Idempotency-Key with one run and one job', async () => {
      const key = `race-${Date.now()}`;
      const responses = await Promise.all(
        Array.from({ length: 8 }, () =>
          call(api.url, 'POST', '/agents/echo-agent/runs', {
            token: alice.token,
            headers: { 'idempotency-key': key },
            json: { message: 'once', background: true },
          }),
        ),
      );
      expect(responses.map((response) => response.status)).toEqual(Array(8).fill(202));
      expect(new Set(responses.map((response) => response.body.run_id)).size).toBe(1);
      expect(await query(databaseUrl, 'SELECT id FROM runs WHERE idempotency_key = $1', [key])).toHaveLength(1);
      expect(await query(databaseUrl, 'SELECT id FROM queue_jobs WHERE idempotency_key = $1', [key])).toHaveLength(1);
    });

    it('refuses stream=true together with background=true', async () => {
      expectErrorBody(
        await call(api.url, 'POST', '/agents/echo-agent/runs', {
          token: alice.token,
          ...form({ message: 'x', stream: 'true', background: 'true' }),
        }),
        400,
      );
    });
  });

  describe('validation', () => {
    it('answers the 422 body for a missing message and a non-boolean flag', async () => {
      const response = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: alice.token, ...form({ stream: 'maybe' }) });
      expect(expectValidationBody(response)).toEqual([
        ['body', 'message'],
        ['body', 'stream'],
      ]);
    });

    it('answers 404, not 500, for a run id that is not a UUID', async () => {
      expectErrorBody(await call(api.url, 'GET', '/agents/echo-agent/runs/not-a-uuid', { token: alice.token }), 404);
      expectErrorBody(await call(api.url, 'POST', '/agents/echo-agent/runs/not-a-uuid/cancel', { token: alice.token }), 404);
    });

    it('refuses NUL and unpaired surrogates wherever PostgreSQL would store or compare them: 422 naming the field, 404 for a path id', async () => {
      const runId = '00000000-0000-4000-8000-000000000000';
      const post = (json: unknown, headers: Record<string, string> = {}) =>
        call(api.url, 'POST', '/agents/echo-agent/runs', { token: alice.token, json, headers });
      expect(expectValidationBody(await post({ message: 'a\u0000b' }))).toEqual([['body', 'message']]);
      // A background run's message goes into jsonb, which refuses half a surrogate pair (it was a 500).
      const surrogate = await post({ message: 'hi \ud800', background: true });
      expect(expectValidationBody(surrogate)).toEqual([['body', 'message']]);
      expect(surrogate.body.detail[0]).toMatchObject({ type: 'no_unpaired_surrogate' });
      expect(expectValidationBody(await post({ message: 'x', session_id: '\udc00' }))).toEqual([['body', 'session_id']]);
      // A whole pair (an emoji) is fine.
      expect((await post({ message: 'hi \ud83d\ude00', background: true })).status).toBe(202);
      expect(expectValidationBody(await post({ message: 'x', idempotency_key: 'k\u0000' }))).toEqual([['body', 'idempotency_key']]);
      expect(expectValidationBody(await post({ message: 'x', session_id: '\u0000' }))).toEqual([['body', 'session_id']]);
      expect(
        expectValidationBody(
          await call(api.url, 'POST', '/agents/echo-agent/runs', { token: alice.token, ...form({ message: 'a\u0000b' }) }),
        ),
      ).toEqual([['body', 'message']]);
      for (const path of [
        `/agents/%00/runs/${runId}`,
        `/agents/echo-agent/runs/${runId}%00`,
        '/agents/%00',
        '/sessions/%00',
        '/sessions/a%00b/runs',
        '/queue/jobs/%00',
      ]) {
        expectErrorBody(await call(api.url, 'GET', path, { token: ROOT_KEY }), 404);
      }
      expectErrorBody(await call(api.url, 'POST', `/agents/%00/runs/${runId}/cancel`, { token: ROOT_KEY }), 404);
      expectErrorBody(await call(api.url, 'POST', '/agents/%00/runs', { token: ROOT_KEY, json: { message: 'x' } }), 404);
      expect(expectValidationBody(await call(api.url, 'GET', '/sessions?sort_by=a%00b', { token: ROOT_KEY }))).toEqual([
        ['query', 'sort_by'],
      ]);
    });

    it('refuses control characters in the Idempotency-Key header with the 422 body, and a header Node cannot parse with the standard body', async () => {
      const tab = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        headers: { 'idempotency-key': 'a\tb' },
        json: { message: 'x' },
      });
      expect(expectValidationBody(tab)).toEqual([['header', 'idempotency-key']]);
      const raw = await rawRequest(
        api.url,
        `POST /agents/echo-agent/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice.token}\r\nIdempotency-Key: a\u0000b\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{"message":"x"}`,
      );
      expect(raw.status).toBe(400);
      expect(JSON.parse(raw.body)).toEqual({ detail: expect.any(String) });
    });
  });

  describe('attribution and self-scoping', () => {
    it("attributes a service account's run to sa:<name>, whatever user_id says", async () => {
      const response = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        ...form({ message: 'mine', user_id: 'someone-else' }),
      });
      expect(response.body.user_id).toBe(`sa:${alice.name}`);
    });

    it('keeps runs and sessions of one service account invisible to another; the security key sees all', async () => {
      const sessionId = `shared-${Date.now()}`;
      const run = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        ...form({ message: 'private', session_id: sessionId }),
      });
      expectErrorBody(await call(api.url, 'GET', `/agents/echo-agent/runs/${run.body.run_id}`, { token: bob.token }), 404);
      expectErrorBody(await call(api.url, 'POST', `/agents/echo-agent/runs/${run.body.run_id}/cancel`, { token: bob.token }), 404);
      expectErrorBody(await call(api.url, 'GET', `/sessions/${sessionId}`, { token: bob.token }), 404);
      expectErrorBody(await call(api.url, 'GET', `/sessions/${sessionId}/runs`, { token: bob.token }), 404);
      // Nor can bob append to alice's session.
      expectErrorBody(
        await call(api.url, 'POST', '/agents/echo-agent/runs', {
          token: bob.token,
          ...form({ message: 'intrude', session_id: sessionId }),
        }),
        404,
      );
      const bobsSessions = await call(api.url, 'GET', '/sessions?limit=100', { token: bob.token });
      expect(bobsSessions.body.data.every((session: { user_id: string }) => session.user_id === `sa:${bob.name}`)).toBe(true);
      expect((await call(api.url, 'GET', `/sessions/${sessionId}`, { token: ROOT_KEY })).body).toMatchObject({
        session_id: sessionId,
        user_id: `sa:${alice.name}`,
      });
    });

    it('continues a session and lists its runs with page metadata', async () => {
      const sessionId = `conversation-${Date.now()}`;
      for (const message of ['one', 'two', 'three']) {
        expect(
          (await call(api.url, 'POST', '/agents/echo-agent/runs', { token: alice.token, ...form({ message, session_id: sessionId }) }))
            .status,
        ).toBe(200);
      }
      const page = await call(api.url, 'GET', `/sessions/${sessionId}/runs?limit=2&sort_order=asc`, { token: alice.token });
      expect(page.status).toBe(200);
      expect(page.body.data.map((run: { content: string }) => run.content)).toEqual(['one', 'two']);
      expect(page.body.meta).toMatchObject({ page: 1, limit: 2, total_pages: 2, total_count: 3 });
      const session = await call(api.url, 'GET', `/sessions/${sessionId}`, { token: alice.token });
      expect(session.body).toEqual({
        session_id: sessionId,
        component_type: 'agent',
        component_id: 'echo-agent',
        user_id: `sa:${alice.name}`,
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
      });
    });

    it('serves a session whose id has the longest length a run accepts (128) on every session route', async () => {
      const sessionId = `long-${'s'.repeat(123)}`;
      const run = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: alice.token,
        ...form({ message: 'hi', session_id: sessionId }),
      });
      expect(run.status).toBe(200);
      expect((await call(api.url, 'GET', `/sessions/${sessionId}`, { token: alice.token })).body).toMatchObject({ session_id: sessionId });
      expect((await call(api.url, 'GET', `/sessions/${sessionId}/runs`, { token: alice.token })).body.meta).toMatchObject({
        total_count: 1,
      });
      expect((await call(api.url, 'DELETE', `/sessions/${sessionId}`, { token: ROOT_KEY })).status).toBe(204);
      expectErrorBody(await call(api.url, 'GET', `/sessions/${sessionId}x`, { token: alice.token }), 404);
    });

    it('deletes a session with its runs and jobs under sessions:delete, only its owner’s, and never with a run going', async () => {
      const scopes = ['agents:run', 'sessions:read', 'sessions:delete'];
      const mint = () => mintAccount(api.url, ROOT_KEY, { scopes, privileged: true });
      const [carol, dave] = await Promise.all([mint(), mint()]);
      const run = (token: string, fields: Record<string, unknown>) =>
        call(api.url, 'POST', '/agents/echo-agent/runs', { token, json: { message: 'hi', ...fields } });
      const sessionId = `to-delete-${Date.now()}`;
      const kept = `kept-${Date.now()}`;
      const finished = [(await run(carol.token, { session_id: sessionId })).body, (await run(carol.token, { session_id: sessionId })).body];
      expect((await run(carol.token, { session_id: kept })).status).toBe(200);
      // No worker here: a background run stays queued.
      const queued = await run(carol.token, { session_id: sessionId, background: true });
      expect(queued.status).toBe(202);
      const path = `/sessions/${sessionId}`;

      // The wrong principals: a token without the scope, another token, nobody.
      const withoutScope = await call(api.url, 'DELETE', path, { token: alice.token });
      expectErrorBody(withoutScope, 403);
      expect(withoutScope.body.detail).toBe('Insufficient permissions. Required scope(s): sessions:delete');
      expectErrorBody(await call(api.url, 'DELETE', path, { token: dave.token }), 404);
      expectErrorBody(await call(api.url, 'DELETE', path), 401);

      const busy = await call(api.url, 'DELETE', path, { token: carol.token });
      expectErrorBody(busy, 409);
      expect(busy.body.detail).toBe(
        `Session '${sessionId}' has 1 run(s) not ended yet: cancel them or wait for them to end, then delete it`,
      );
      expect((await call(api.url, 'GET', path, { token: carol.token })).status).toBe(200);
      expect((await call(api.url, 'POST', `/agents/echo-agent/runs/${queued.body.run_id}/cancel`, { token: carol.token })).status).toBe(
        200,
      );

      const deleted = await call(api.url, 'DELETE', path, { token: carol.token });
      expect(deleted.status, deleted.text).toBe(204);
      expect(deleted.text).toBe('');
      expectErrorBody(await call(api.url, 'GET', path, { token: carol.token }), 404);
      for (const runId of [...finished.map((body) => body.run_id as string), queued.body.run_id as string]) {
        expectErrorBody(await call(api.url, 'GET', `/agents/echo-agent/runs/${runId}`, { token: carol.token }), 404);
      }
      expect(await query(databaseUrl, 'SELECT id FROM queue_jobs WHERE id = $1', [queued.body.run_id])).toEqual([]);
      expect((await call(api.url, 'GET', `/sessions/${kept}/runs`, { token: carol.token })).body.meta.total_count).toBe(1);
      expectErrorBody(await call(api.url, 'DELETE', path, { token: carol.token }), 404);

      // The id is free again: a run naming it starts a new session holding only that run.
      expect((await run(carol.token, { session_id: sessionId })).status).toBe(200);
      expect((await call(api.url, 'GET', `${path}/runs`, { token: carol.token })).body.meta.total_count).toBe(1);
    });

    it('deletes a session whose background run’s job ended while its own row still says running (swept)', async () => {
      const owner = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run', 'sessions:delete'], privileged: true });
      const sessionId = `swept-${Date.now()}`;
      const queued = await call(api.url, 'POST', '/agents/echo-agent/runs', {
        token: owner.token,
        json: { message: 'hi', session_id: sessionId, background: true },
      });
      expect(queued.status).toBe(202);
      // As a sweep leaves it: the job failed (lost worker), the run's row not settled until retention.
      await query(databaseUrl, `UPDATE runs SET status = 'running' WHERE id = $1`, [queued.body.run_id]);
      await query(databaseUrl, `UPDATE queue_jobs SET status = 'failed', completed_at = now() WHERE id = $1`, [queued.body.run_id]);
      const deleted = await call(api.url, 'DELETE', `/sessions/${sessionId}`, { token: owner.token });
      expect(deleted.status, deleted.text).toBe(204);
    });

    it('checks the run scope per component', async () => {
      const narrow = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:echo-agent:run'] });
      expect((await call(api.url, 'POST', '/agents/echo-agent/runs', { token: narrow.token, ...form({ message: 'ok' }) })).status).toBe(
        200,
      );
      const denied = await call(api.url, 'POST', '/agents/sleep-agent/runs', { token: narrow.token, ...form({ message: '1' }) });
      expectErrorBody(denied, 403);
      expect(denied.body.detail).toBe('Insufficient permissions. Required scope(s): agents:run or agents:sleep-agent:run');
    });
  });
});

describe('background runs on a replica without the queue', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      DEMO_COMPONENTS: 'true',
      QUEUE_ENABLED: 'false',
    });
  });
  afterAll(() => api?.stop());

  it('answers 503 to background=true and still runs synchronously', async () => {
    expectErrorBody(
      await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, ...form({ message: 'x', background: 'true' }) }),
      503,
    );
    expect((await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, ...form({ message: 'x' }) })).status).toBe(200);
  });
});

/** A hand-written HTTP/1.1 request (fetch refuses NUL in headers): the status and body of the answer. */
async function rawRequest(baseUrl: string, request: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(baseUrl);
  const { connect } = await import('node:net');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(request));
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = text.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), body: rest.join('\r\n\r\n') });
    });
  });
}

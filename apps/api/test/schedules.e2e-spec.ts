import { createHmac, randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { nextYearly } from '../../../test/support/cron';
import { createTestDatabase, query } from '../../../test/support/database';
import { expectErrorBody, expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { RunningApi, startApi, waitFor } from '../../../test/support/processes';

const NEW_YEAR_2100 = 4102444800; // 2100-01-01T00:00:00Z

/** A valid five-field cron expression exactly `length` characters long (minute list of zeros). */
function cronOfLength(length: number): string {
  const suffix = ' 0 1 1 *';
  const minutes = `10${',0'.repeat((length - suffix.length - 2) / 2)}`;
  return `${minutes}${suffix}`;
}

describe('schedules api (security_key mode)', () => {
  let api: RunningApi;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY });
  });
  afterAll(() => api?.stop());

  const create = (json: Record<string, unknown>, token = ROOT_KEY) => call(api.url, 'POST', '/schedules', { token, json });
  const createOk = async (json: Record<string, unknown> = {}, token = ROOT_KEY) => {
    const response = await create(
      { name: uniqueName('sched'), cron_expr: '0 0 1 1 *', endpoint: '/health', method: 'GET', ...json },
      token,
    );
    expect(response.status, response.text).toBe(201);
    return response.body;
  };
  const patch = (id: string, json: unknown, token = ROOT_KEY) => call(api.url, 'PATCH', `/schedules/${id}`, { token, json });

  describe('POST /schedules', () => {
    it('creates with defaults, derives the target and computes next_run_at', async () => {
      const name = uniqueName('sched');
      const response = await create({ name, cron_expr: '0 0 1 1 *', endpoint: '/agents/echo-agent/runs', payload: { message: 'hi' } });
      expect(response.status, response.text).toBe(201);
      const now = Math.floor(Date.now() / 1000);
      expect(response.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name,
        method: 'POST',
        endpoint: '/agents/echo-agent/runs',
        cron_expr: '0 0 1 1 *',
        timezone: 'UTC',
        timeout_seconds: 3600,
        max_retries: 0,
        retry_delay_seconds: 60,
        enabled: true,
        user_id: null,
        description: null,
        payload: { message: 'hi' },
        next_run_at: nextYearly(0, 1, 0),
        managed_by: null,
        target_type: 'agent',
        target_id: 'echo-agent',
        disabled_reason: null,
        overlap_policy: 'skip',
        catchup_policy: 'once',
        catchup_limit: 10,
        created_at: expect.any(Number),
        updated_at: expect.any(Number),
      });
      expect(Math.abs(response.body.created_at - now)).toBeLessThan(5);
    });

    it('follows the timezone: midnight in Berlin is 23:00 UTC in winter', async () => {
      const schedule = await createOk({ cron_expr: '0 0 1 1 *', timezone: 'Europe/Berlin' });
      expect(schedule.next_run_at).toBe(nextYearly(11, 31, 23));
    });

    it('stores method upper-case, keeps managed_by, and sets no target for other endpoints', async () => {
      const schedule = await createOk({ method: 'delete', endpoint: '/sessions/abc', managed_by: 'terraform' });
      expect(schedule).toMatchObject({ method: 'DELETE', managed_by: 'terraform', target_type: null, target_id: null });
    });

    it('starts disabled without a next_run_at when enabled=false', async () => {
      expect(await createOk({ enabled: false })).toMatchObject({ enabled: false, next_run_at: null });
    });

    it('answers 422 naming each missing or bad field', async () => {
      expect(expectValidationBody(await create({}))).toEqual([
        ['body', 'name'],
        ['body', 'cron_expr'],
        ['body', 'endpoint'],
      ]);
      const bad = await create({
        name: 'ok',
        cron_expr: '61 * * * *',
        endpoint: 'health',
        timezone: 'Mars/Base',
        method: 'FETCH',
        payload: [1],
      });
      expect(expectValidationBody(bad)).toEqual([
        ['body', 'cron_expr'],
        ['body', 'endpoint'],
        ['body', 'method'],
        ['body', 'payload'],
        ['body', 'timezone'],
      ]);
      const cron = bad.body.detail.find((issue: { loc: string[] }) => issue.loc[1] === 'cron_expr');
      expect(cron).toMatchObject({ type: 'isCronExpression', input: '61 * * * *', msg: expect.stringContaining('minute') });
      expect(expectValidationBody(await create({ name: 'x', cron_expr: '0 0 30 2 *', endpoint: '/health' }))).toEqual([
        ['body', 'cron_expr'],
      ]);
    });

    it('accepts any name up to 255 characters without control characters', async () => {
      for (const name of [`Nightly (v2) ${Date.now()}`, `Rapport été ${Date.now()}`, 'x'.repeat(255)]) {
        expect((await createOk({ name })).name).toBe(name);
      }
      for (const name of ['', 'x'.repeat(256), 'a\u0000b', 'bell\u0007']) {
        expect(expectValidationBody(await create({ name, cron_expr: '* * * * *', endpoint: '/health' })), JSON.stringify(name)).toEqual([
          ['body', 'name'],
        ]);
      }
    });

    it('refuses NUL in any string of the body, payload included, naming where (never a 500)', async () => {
      const body = { name: uniqueName('sched'), cron_expr: '0 0 1 1 *', endpoint: '/health', method: 'GET' };
      expect(expectValidationBody(await create({ ...body, description: 'a\u0000b' }))).toEqual([['body', 'description']]);
      expect(expectValidationBody(await create({ ...body, payload: { deep: ['ok', 'x\u0000'] } }))).toEqual([
        ['body', 'payload', 'deep', 1],
      ]);
      expect(expectValidationBody(await create({ ...body, payload: { 'k\u0000': 1 } }))).toEqual([['body', 'payload', 'k\u0000']]);
      // Half a surrogate pair, which jsonb refuses (it was a 500), in a value and in a key.
      expect(expectValidationBody(await create({ ...body, payload: { message: 'hi \ud83d' } }))).toEqual([['body', 'payload', 'message']]);
      expect(expectValidationBody(await create({ ...body, payload: { '\udc00': 'x' } }))).toEqual([['body', 'payload', '\udc00']]);
      expect(expectValidationBody(await call(api.url, 'GET', '/schedules?managed_by=a%00b', { token: ROOT_KEY }))).toEqual([
        ['query', 'managed_by'],
      ]);
    });

    it('refuses a body nested deeper than 32 levels with the 422 body (it overflowed the stack: a 500)', async () => {
      const deep = JSON.parse(`${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`);
      const response = await create({
        name: uniqueName('sched'),
        cron_expr: '0 0 1 1 *',
        endpoint: '/health',
        method: 'GET',
        payload: deep,
      });
      const [loc] = expectValidationBody(response);
      expect(loc.slice(0, 3)).toEqual(['body', 'payload', 'a']);
      expect(response.body.detail[0]).toMatchObject({ type: 'max_depth', ctx: { max_depth: 32 } });
      const nested = JSON.parse(`${'{"a":'.repeat(20)}1${'}'.repeat(20)}`);
      expect((await createOk({ payload: nested })).payload).toEqual(nested);
    });

    it('answers 409 for a second schedule of the same owner with the same name', async () => {
      const first = await createOk();
      const again = await create({ name: first.name, cron_expr: '* * * * *', endpoint: '/health' });
      expectErrorBody(again, 409);
      expect(again.body.detail).toBe(`Schedule with name '${first.name}' already exists`);
    });
  });

  describe('GET /schedules and /schedules/{id}', () => {
    it('gets one and 404s an unknown id, a malformed one and one holding NUL', async () => {
      const schedule = await createOk();
      expect((await call(api.url, 'GET', `/schedules/${schedule.id}`, { token: ROOT_KEY })).body).toEqual(schedule);
      const missing = await call(api.url, 'GET', '/schedules/00000000-0000-4000-8000-000000000000', { token: ROOT_KEY });
      expectErrorBody(missing, 404);
      for (const bad of ['nope', '%00', `${schedule.id}%00`]) {
        expectErrorBody(await call(api.url, 'GET', `/schedules/${bad}`, { token: ROOT_KEY }), 404);
        expectErrorBody(await patch(bad, { name: 'x' }), 404);
        expectErrorBody(await call(api.url, 'DELETE', `/schedules/${bad}`, { token: ROOT_KEY }), 404);
        expectErrorBody(await call(api.url, 'POST', `/schedules/${bad}/trigger`, { token: ROOT_KEY }), 404);
        expectErrorBody(await call(api.url, 'GET', `/schedules/${bad}/runs`, { token: ROOT_KEY }), 404);
        expectErrorBody(await call(api.url, 'GET', `/schedules/${schedule.id}/runs/${bad}`, { token: ROOT_KEY }), 404);
      }
    });

    it('filters, pages and sorts with meta', async () => {
      const managedBy = `tool-${Date.now()}`;
      const created = [];
      for (let i = 0; i < 3; i += 1) {
        created.push(await createOk({ managed_by: managedBy, enabled: i !== 1, endpoint: '/agents/echo-agent/runs', method: 'POST' }));
      }
      const page = await call(api.url, 'GET', `/schedules?managed_by=${managedBy}&limit=2&sort_by=name&sort_order=asc`, {
        token: ROOT_KEY,
      });
      expect(page.status).toBe(200);
      expect(page.body.meta).toEqual({ page: 1, limit: 2, total_pages: 2, total_count: 3, search_time_ms: expect.any(Number) });
      expect(page.body.data.map((s: { name: string }) => s.name)).toEqual(
        created
          .map((s) => s.name)
          .sort()
          .slice(0, 2),
      );
      const enabled = await call(api.url, 'GET', `/schedules?managed_by=${managedBy}&enabled=false`, { token: ROOT_KEY });
      expect(enabled.body.data.map((s: { id: string }) => s.id)).toEqual([created[1].id]);
      const targeted = await call(api.url, 'GET', `/schedules?managed_by=${managedBy}&target_type=agent&target_id=echo-agent`, {
        token: ROOT_KEY,
      });
      expect(targeted.body.meta.total_count).toBe(3);
      expect(expectValidationBody(await call(api.url, 'GET', '/schedules?limit=1001', { token: ROOT_KEY }))).toEqual([['query', 'limit']]);
      expect(expectValidationBody(await call(api.url, 'GET', '/schedules?target_type=robot', { token: ROOT_KEY }))).toEqual([
        ['query', 'target_type'],
      ]);
      // Only the boolean words are booleans: a name every object has is not one.
      for (const word of ['constructor', '__proto__', 'maybe']) {
        expect(expectValidationBody(await call(api.url, 'GET', `/schedules?enabled=${word}`, { token: ROOT_KEY })), word).toEqual([
          ['query', 'enabled'],
        ]);
      }
    });
  });

  describe('PATCH /schedules/{schedule_id}', () => {
    let id: string;
    beforeAll(async () => {
      id = (await createOk()).id;
    });

    const validTimezone = 'America/Argentina/ComodRivadavia';
    const bounds: [field: string, inside: unknown[], outside: unknown[]][] = [
      // The spec: any string up to 255 characters; control characters (NUL among them) are refused.
      [
        'name',
        ['n'.repeat(255), 'n', 'Nightly (v2)', 'Rapport: été/夜 #3 [prod] 🚀', ' padded '],
        ['n'.repeat(256), '', 'a\u0000b', 'tab\there', 'line\nbreak', 'del\u007f'],
      ],
      ['cron_expr', [cronOfLength(128)], [`0${cronOfLength(128)}`]],
      ['endpoint', [`/${'e'.repeat(511)}`, '/'], [`/${'e'.repeat(512)}`]],
      ['method', ['DELETE', 'get'], ['PROPPATCHES', 'head']],
      ['description', ['d'.repeat(1024)], ['d'.repeat(1025)]],
      ['timezone', [validTimezone, 'UTC'], ['T'.repeat(65)]],
      ['timeout_seconds', [1, 86400], [0, 86401]],
      ['max_retries', [0, 10], [-1, 11]],
      ['retry_delay_seconds', [1, 3600], [0, 3601]],
    ];

    it.each(bounds)('accepts %s just inside its range and refuses it just outside with the 422 body', async (field, inside, outside) => {
      for (const value of inside) {
        const response = await patch(id, { [field]: value });
        expect(response.status, `${field}=${JSON.stringify(value)}: ${response.text}`).toBe(200);
        expect(response.body[field]).toEqual(field === 'method' ? String(value).toUpperCase() : value);
      }
      for (const value of outside) {
        const response = await patch(id, { [field]: value });
        expect(expectValidationBody(response), `${field}=${JSON.stringify(value)}`).toEqual([['body', field]]);
        expect(response.body.detail[0].input).toEqual(value);
      }
    });

    it('reports length first: at 11 characters method breaks maxLength, at 10 only the allowed verbs', async () => {
      const eleven = await patch(id, { method: 'PROPPATCHES' });
      expect(eleven.body.detail.map((issue: { type: string }) => issue.type)).toContain('maxLength');
      const ten = await patch(id, { method: 'PROPPATCHE' });
      expect(ten.body.detail.map((issue: { type: string }) => issue.type)).toEqual(['isIn']);
      const longZone = await patch(id, { timezone: 'T'.repeat(64) });
      expect(longZone.body.detail.map((issue: { type: string }) => issue.type)).toEqual(['isTimeZone']);
    });

    it('refuses null for required fields, wrong types and fractions, but clears description and payload', async () => {
      for (const field of [
        'name',
        'cron_expr',
        'endpoint',
        'method',
        'timezone',
        'timeout_seconds',
        'max_retries',
        'retry_delay_seconds',
      ]) {
        expect(expectValidationBody(await patch(id, { [field]: null })), field).toEqual([['body', field]]);
      }
      expect(expectValidationBody(await patch(id, { timeout_seconds: '5', max_retries: 1.5 }))).toEqual([
        ['body', 'timeout_seconds'],
        ['body', 'max_retries'],
      ]);
      expect(expectValidationBody(await patch(id, { payload: 'text' }))).toEqual([['body', 'payload']]);
      expect(expectValidationBody(await patch(id, ['name']))).toEqual([['body']]);
      const cleared = await patch(id, { description: null, payload: null });
      expect(cleared.body).toMatchObject({ description: null, payload: null });
      expect((await patch(id, { payload: { nested: { a: [1, 2] } } })).body.payload).toEqual({ nested: { a: [1, 2] } });
    });

    it('recomputes next_run_at on cron, timezone and enabled changes only', async () => {
      const schedule = await createOk({ cron_expr: '0 0 1 1 *' });
      expect((await patch(schedule.id, { cron_expr: '0 12 1 1 *' })).body.next_run_at).toBe(nextYearly(0, 1, 12));
      expect((await patch(schedule.id, { timezone: 'America/New_York' })).body.next_run_at).toBe(nextYearly(0, 1, 17));
      expect((await patch(schedule.id, { name: uniqueName('renamed') })).body.next_run_at).toBe(nextYearly(0, 1, 17));
      expect((await patch(schedule.id, { enabled: false })).body).toMatchObject({ enabled: false, next_run_at: null });
      expect((await patch(schedule.id, { enabled: true })).body).toMatchObject({ enabled: true, next_run_at: nextYearly(0, 1, 17) });
    });

    it('re-derives the target when the endpoint changes', async () => {
      const schedule = await createOk();
      const response = await patch(schedule.id, { endpoint: '/workflows/echo-workflow/runs', method: 'post' });
      expect(response.body).toMatchObject({ target_type: 'workflow', target_id: 'echo-workflow' });
      expect((await patch(schedule.id, { method: 'GET' })).body).toMatchObject({ target_type: null, target_id: null });
    });

    it('clears disabled_reason when re-enabled', async () => {
      const schedule = await createOk();
      await query(
        databaseUrl,
        `UPDATE schedules SET enabled = false, next_run_at = NULL, disabled_reason = 'creator_revoked:sa:x' WHERE id = $1`,
        [schedule.id],
      );
      expect((await call(api.url, 'GET', `/schedules/${schedule.id}`, { token: ROOT_KEY })).body.disabled_reason).toBe(
        'creator_revoked:sa:x',
      );
      expect((await patch(schedule.id, { enabled: true })).body).toMatchObject({
        enabled: true,
        disabled_reason: null,
        next_run_at: expect.any(Number),
      });
    });

    it('returns the schedule unchanged for an empty body, refuses unknown fields (a misspelt one changed nothing, with a 200), and 404s an unknown id', async () => {
      const schedule = await createOk();
      expect((await patch(schedule.id, {})).body).toEqual(schedule);
      const misspelt = await patch(schedule.id, { cron: '5 5 * * *', timeout: 30, name: 'renamed' });
      expect(expectValidationBody(misspelt)).toEqual([
        ['body', 'cron'],
        ['body', 'timeout'],
      ]);
      expect(misspelt.body.detail[0]).toMatchObject({
        type: 'extra_forbidden',
        msg: "Unknown field 'cron': it is not one this request takes",
      });
      // Fields of the schedule the body may not set are not taken silently either.
      expect(expectValidationBody(await patch(schedule.id, { managed_by: 'sneaky', id: 'y' }))).toEqual([
        ['body', 'managed_by'],
        ['body', 'id'],
      ]);
      expect((await call(api.url, 'GET', `/schedules/${schedule.id}`, { token: ROOT_KEY })).body).toEqual(schedule);
      expect(expectValidationBody(await create({ name: 'typo', cron_expr: '0 * * * *', endpoint: '/health', timeout: 30 }))).toEqual([
        ['body', 'timeout'],
      ]);
      expectErrorBody(await patch('00000000-0000-4000-8000-000000000000', { name: 'x' }), 404);
    });

    it('answers 409 when renamed onto another schedule of the owner', async () => {
      const [a, b] = [await createOk(), await createOk()];
      expectErrorBody(await patch(b.id, { name: a.name }), 409);
    });
  });

  describe('DELETE, trigger and history', () => {
    it('deletes with 204, then 404s', async () => {
      const schedule = await createOk();
      const deleted = await call(api.url, 'DELETE', `/schedules/${schedule.id}`, { token: ROOT_KEY });
      expect(deleted.status).toBe(204);
      expect(deleted.text).toBe('');
      expectErrorBody(await call(api.url, 'GET', `/schedules/${schedule.id}`, { token: ROOT_KEY }), 404);
      expectErrorBody(await call(api.url, 'DELETE', `/schedules/${schedule.id}`, { token: ROOT_KEY }), 404);
    });

    it('queues a manual fire with 202 that shows in the history, without moving next_run_at', async () => {
      const schedule = await createOk();
      const triggered = await call(api.url, 'POST', `/schedules/${schedule.id}/trigger`, { token: ROOT_KEY });
      expect(triggered.status, triggered.text).toBe(202);
      expect(triggered.body).toEqual({
        id: expect.any(String),
        schedule_id: schedule.id,
        trigger: 'manual',
        status: 'queued',
        reason: null,
        due_at: expect.any(Number),
        started_at: null,
        completed_at: null,
        status_code: null,
        error: null,
        run_id: null,
        run_status: null,
        attempts: [],
        created_at: expect.any(Number),
      });
      const history = await call(api.url, 'GET', `/schedules/${schedule.id}/runs`, { token: ROOT_KEY });
      expect(history.body.data).toEqual([triggered.body]);
      expect(history.body.meta.total_count).toBe(1);
      const one = await call(api.url, 'GET', `/schedules/${schedule.id}/runs/${triggered.body.id}`, { token: ROOT_KEY });
      expect(one.body).toEqual(triggered.body);
      expect((await call(api.url, 'GET', `/schedules/${schedule.id}`, { token: ROOT_KEY })).body.next_run_at).toBe(schedule.next_run_at);
      const other = await createOk();
      expectErrorBody(await call(api.url, 'GET', `/schedules/${other.id}/runs/${triggered.body.id}`, { token: ROOT_KEY }), 404);
    });

    it('refuses to trigger a disabled schedule with 409', async () => {
      const schedule = await createOk({ enabled: false });
      const response = await call(api.url, 'POST', `/schedules/${schedule.id}/trigger`, { token: ROOT_KEY });
      expectErrorBody(response, 409);
      expect(response.body.detail).toContain('is disabled');
    });

    it('deletes the history with the schedule', async () => {
      const schedule = await createOk();
      await call(api.url, 'POST', `/schedules/${schedule.id}/trigger`, { token: ROOT_KEY });
      await call(api.url, 'DELETE', `/schedules/${schedule.id}`, { token: ROOT_KEY });
      expect(await query(databaseUrl, 'SELECT id FROM schedule_runs WHERE schedule_id = $1', [schedule.id])).toEqual([]);
    });
  });

  describe('a revoked owner', () => {
    it('disables the schedules of a revoked account, and of the accounts it minted, at once', async () => {
      const scopes = ['schedules:write', 'schedules:read', 'service_accounts:write'];
      const owner = await mintAccount(api.url, ROOT_KEY, { scopes, privileged: true });
      const child = await mintAccount(api.url, owner.token, { scopes: ['schedules:write', 'schedules:read'], privileged: true });
      const other = await mintAccount(api.url, ROOT_KEY, { scopes: ['schedules:write'], privileged: true });
      const [mine, childs, others] = [await createOk({}, owner.token), await createOk({}, child.token), await createOk({}, other.token)];
      const paused = await createOk({ enabled: false }, owner.token);

      expect((await call(api.url, 'DELETE', `/service-accounts/${owner.id}`, { token: ROOT_KEY })).status).toBe(200);
      const state = async (id: string) => (await call(api.url, 'GET', `/schedules/${id}`, { token: ROOT_KEY })).body;
      expect(await state(mine.id)).toMatchObject({ enabled: false, next_run_at: null, disabled_reason: `owner_revoked:sa:${owner.name}` });
      expect(await state(childs.id)).toMatchObject({ enabled: false, disabled_reason: `owner_revoked:sa:${child.name}` });
      // Another account's schedule runs on; one paused already keeps its own reason (none).
      expect(await state(others.id)).toMatchObject({ enabled: true, disabled_reason: null });
      expect(await state(paused.id)).toMatchObject({ enabled: false, disabled_reason: null });
    });
  });

  describe('scopes and self-scoping', () => {
    it('requires schedules:read, schedules:write and schedules:delete', async () => {
      const reader = await mintAccount(api.url, ROOT_KEY, { scopes: ['schedules:read'] });
      const schedule = await createOk();
      expectErrorBody(await create({ name: 'x', cron_expr: '* * * * *', endpoint: '/health' }, reader.token), 403);
      expectErrorBody(await patch(schedule.id, { name: 'x' }, reader.token), 403);
      expectErrorBody(await call(api.url, 'POST', `/schedules/${schedule.id}/trigger`, { token: reader.token }), 403);
      expectErrorBody(await call(api.url, 'DELETE', `/schedules/${schedule.id}`, { token: reader.token }), 403);
      expect((await call(api.url, 'GET', '/schedules', { token: reader.token })).status).toBe(200);
      expectErrorBody(await call(api.url, 'GET', '/schedules'), 401);
    });

    it('confines service accounts to their own schedules; the security key sees all', async () => {
      const scopes = ['schedules:read', 'schedules:write', 'schedules:delete'];
      const [alice, bob] = [
        await mintAccount(api.url, ROOT_KEY, { scopes, privileged: true }),
        await mintAccount(api.url, ROOT_KEY, { scopes, privileged: true }),
      ];
      const mine = await createOk({ user_id: 'ignored-for-service-accounts' }, alice.token);
      expect(mine.user_id).toBe(`sa:${alice.name}`);
      expectErrorBody(await call(api.url, 'GET', `/schedules/${mine.id}`, { token: bob.token }), 404);
      expectErrorBody(await patch(mine.id, { name: 'stolen' }, bob.token), 404);
      expectErrorBody(await call(api.url, 'POST', `/schedules/${mine.id}/trigger`, { token: bob.token }), 404);
      expectErrorBody(await call(api.url, 'GET', `/schedules/${mine.id}/runs`, { token: bob.token }), 404);
      expectErrorBody(await call(api.url, 'DELETE', `/schedules/${mine.id}`, { token: bob.token }), 404);
      expect((await call(api.url, 'GET', '/schedules?limit=1000', { token: bob.token })).body.data).toEqual([]);
      expect(
        (await call(api.url, 'GET', '/schedules?limit=1000', { token: alice.token })).body.data.map((s: { id: string }) => s.id),
      ).toEqual([mine.id]);
      expect((await call(api.url, 'GET', `/schedules/${mine.id}`, { token: ROOT_KEY })).status).toBe(200);
      // Names are unique per owner, so bob may use alice's name.
      expect((await createOk({ name: mine.name }, bob.token)).name).toBe(mine.name);
    });

    it('attributes a security-key schedule to the user_id it names', async () => {
      expect((await createOk({ user_id: 'alice' })).user_id).toBe('alice');
      // An empty one names nobody: refused, not stored as an owner no caller can be.
      const empty = await create({ name: 'x', cron_expr: '0 * * * *', endpoint: '/health', user_id: '' });
      expect(expectValidationBody(empty)).toEqual([['body', 'user_id']]);
    });

    it('accepts a validly signed schedule credential for its own call, and never a forged or expired one, one for another call, or one for a disabled schedule', async () => {
      const schedule = await createOk({ endpoint: '/config' });
      const forged = `svc_sch_${schedule.id}.${NEW_YEAR_2100}.${'A'.repeat(43)}`;
      const refused = async (token: string, path = '/config') => {
        const response = await call(api.url, 'GET', path, { token });
        expectErrorBody(response, 401);
        expect(response.body.detail).toBe(
          'Invalid or expired schedule credential, not issued for this call, or the schedule is disabled (or api and worker hold different INTERNAL_SERVICE_TOKEN values)',
        );
      };
      // The first credential checked makes the api generate its signing key (none is configured here).
      await refused(forged);
      await refused('svc_sch_garbage');
      const [{ value: key }] = await query<{ value: string }>(
        databaseUrl,
        `SELECT value FROM internal_secrets WHERE name = 'internal_service_token'`,
      );
      const signed = (scheduleId: string, expiresAt: number, call = 'GET /config') =>
        `svc_sch_${scheduleId}.${expiresAt}.${createHmac('sha256', key).update(`${scheduleId}.${expiresAt}.${call}`).digest('base64url')}`;
      // As the worker sends them: with the tag of the key that signed them beside the credential.
      const tagOf = (secret: string) => createHmac('sha256', secret).update('schedule credential key tag').digest('hex').slice(0, 8);
      const fired = (token: string, tag: string) => call(api.url, 'GET', '/config', { token, headers: { 'schedule-key-tag': tag } });

      expect((await call(api.url, 'GET', '/config', { token: signed(schedule.id, NEW_YEAR_2100) })).status).toBe(200);
      expect((await fired(signed(schedule.id, NEW_YEAR_2100), tagOf(key))).status).toBe(200);
      // A worker holding another INTERNAL_SERVICE_TOKEN: the refusal names the cause, and the api's log says it too.
      const anotherTag = tagOf('another-internal-service-token');
      // Not for junk with a tag: an expired credential, or one naming no schedule (the tag itself is not signed).
      for (const junk of [
        signed(schedule.id, Math.floor(Date.now() / 1000) - 1),
        `svc_sch_${randomUUID()}.${NEW_YEAR_2100}.${'A'.repeat(43)}`,
        // No UUID: it must not reach the database's uuid column (a 500, before).
        `svc_sch_${'-'.repeat(36)}.${NEW_YEAR_2100}.${'A'.repeat(43)}`,
        `svc_sch_${'a'.repeat(36)}.${NEW_YEAR_2100}.${'A'.repeat(43)}`,
      ]) {
        expect((await fired(junk, anotherTag)).body.detail).toBe(
          'Invalid or expired schedule credential, not issued for this call, or the schedule is disabled',
        );
      }
      expect(api.output()).not.toContain('credential signed with another key');
      const otherKey = await fired(forged, anotherTag);
      expectErrorBody(otherKey, 401);
      expect(otherKey.body.detail).toBe(
        'Schedule credential signed with another key: the api and the worker hold different INTERNAL_SERVICE_TOKEN values (set the same on both, or on neither)',
      );
      // The same key's tag on a credential that fails for another reason gets the general refusal.
      expect((await fired(signed(schedule.id, Math.floor(Date.now() / 1000) - 1), tagOf(key))).body.detail).toBe(
        'Invalid or expired schedule credential, not issued for this call, or the schedule is disabled',
      );
      await waitFor(async () => api.output().includes('credential signed with another key'), 5_000, 'the api to log the other key');
      await refused(signed(schedule.id, NEW_YEAR_2100), '/service-accounts');
      await refused(signed(schedule.id, NEW_YEAR_2100, 'GET /service-accounts'), '/service-accounts');
      await refused(signed(schedule.id, Math.floor(Date.now() / 1000) - 1));
      await call(api.url, 'PATCH', `/schedules/${schedule.id}`, { token: ROOT_KEY, json: { enabled: false } });
      await refused(signed(schedule.id, NEW_YEAR_2100));
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../support/database';
import { call } from '../support/http';
import { uniqueName } from '../support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../support/processes';

const OLD_KEY = 'old-security-key-0123456789abcdef';
const NEW_KEY = 'new-security-key-0123456789abcdef';
const YEARLY = '0 0 1 1 *';

/**
 * Threat model: a schedule written with the security key fires as root. Rotating the key is how an operator
 * revokes a leaked one, so every schedule the old key wrote must stop acting with it, whoever triggers it.
 */
describe('security: rotating the security key stops the schedules the old key wrote', () => {
  let databaseUrl: string;
  let api: RunningApi;
  let worker: RunningProcess;
  let oldKeys: { id: string };
  let legacy: { id: string };

  const create = async (url: string, key: string) => {
    const response = await call(url, 'POST', '/schedules', {
      token: key,
      json: { name: uniqueName('keyed'), cron_expr: YEARLY, method: 'GET', endpoint: '/config' },
    });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string };
  };

  async function fireOf(id: string): Promise<{ status: string; error: string | null }> {
    expect((await call(api.url, 'POST', `/schedules/${id}/trigger`, { token: NEW_KEY })).status).toBe(202);
    let fires: { status: string; error: string | null }[] = [];
    await waitFor(
      async () => {
        fires = (await call(api.url, 'GET', `/schedules/${id}/runs`, { token: NEW_KEY })).body.data;
        return fires.length > 0 && ['success', 'failed'].includes(fires[0].status);
      },
      20_000,
      `a fire of ${id}`,
    );
    return fires[0];
  }

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const before = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: OLD_KEY });
    try {
      oldKeys = await create(before.url, OLD_KEY);
      legacy = await create(before.url, OLD_KEY);
    } finally {
      await before.stop();
    }
    // As a release before fingerprints stored it.
    await query(databaseUrl, 'UPDATE schedules SET owner_key_fingerprint = NULL WHERE id = $1', [legacy.id]);
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: NEW_KEY });
    worker = await startWorker({ DATABASE_URL: databaseUrl, PUBLIC_URL: api.url, SCHEDULE_TICK_INTERVAL_MS: '200' });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  it('stores which key wrote a schedule, never the key itself', async () => {
    const [row] = await query<{ owner_key_fingerprint: string }>(databaseUrl, 'SELECT owner_key_fingerprint FROM schedules WHERE id = $1', [
      oldKeys.id,
    ]);
    expect(row.owner_key_fingerprint).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const dump = JSON.stringify(await query(databaseUrl, 'SELECT * FROM schedules'));
    expect(dump).not.toContain(OLD_KEY);
  });

  it('a schedule of the old key fires no more, and is disabled saying why once refusals outlast a rollout', async () => {
    const schedule = async () => (await call(api.url, 'GET', `/schedules/${oldKeys.id}`, { token: NEW_KEY })).body;
    // A replica still holding the old key (a rolling update) may accept it: the first refusals fail the fire only.
    expect(await fireOf(oldKeys.id)).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('disabled if that lasts 15 minutes'),
    });
    expect(await schedule()).toMatchObject({ enabled: true, disabled_reason: null });
    // Refused for longer than a rollout takes.
    await query(databaseUrl, "UPDATE schedules SET owner_refused_since = now() - interval '16 minutes' WHERE id = $1", [oldKeys.id]);
    expect(await fireOf(oldKeys.id)).toMatchObject({ status: 'failed' });
    expect(await schedule()).toMatchObject({ enabled: false, disabled_reason: 'owner_credential_unaccepted:security_key' });
  });

  it('an accepted fire forgets earlier refusals: the replica that refused was on the old settings', async () => {
    const current = await create(api.url, NEW_KEY);
    await query(databaseUrl, "UPDATE schedules SET owner_refused_since = now() - interval '10 minutes' WHERE id = $1", [current.id]);
    expect(await fireOf(current.id)).toMatchObject({ status: 'success' });
    const [row] = await query<{ owner_refused_since: Date | null }>(
      databaseUrl,
      'SELECT owner_refused_since FROM schedules WHERE id = $1',
      [current.id],
    );
    expect(row.owner_refused_since).toBeNull();
  });

  it('a schedule the new key writes fires, and so does one stored before keys were told apart', async () => {
    const current = await create(api.url, NEW_KEY);
    expect(await fireOf(current.id)).toMatchObject({ status: 'success' });
    expect(await fireOf(legacy.id)).toMatchObject({ status: 'success' });
  });

  it('the new key takes over an old schedule by writing its call (and so owning it)', async () => {
    const taken = await call(api.url, 'PATCH', `/schedules/${oldKeys.id}`, {
      token: NEW_KEY,
      json: { endpoint: '/config', enabled: true },
    });
    expect(taken.status, taken.text).toBe(200);
    // A new owner starts with no refusals behind it.
    const [row] = await query<{ owner_refused_since: Date | null }>(
      databaseUrl,
      'SELECT owner_refused_since FROM schedules WHERE id = $1',
      [oldKeys.id],
    );
    expect(row.owner_refused_since).toBeNull();
    const fires = async () => (await call(api.url, 'GET', `/schedules/${oldKeys.id}/runs`, { token: NEW_KEY })).body.data;
    const earlier = (await fires()).length;
    expect((await call(api.url, 'POST', `/schedules/${oldKeys.id}/trigger`, { token: NEW_KEY })).status).toBe(202);
    await waitFor(
      async () => (await fires()).length > earlier && (await fires())[0].status === 'success',
      20_000,
      'the fire after the takeover',
    );
  });
});

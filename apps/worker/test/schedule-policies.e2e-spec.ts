import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { awayFromNow } from '../../../test/support/cron';
import { createTestDatabase, query } from '../../../test/support/database';
import { expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

interface Fire {
  id: string;
  trigger: string;
  status: string;
  reason: string | null;
  due_at: number;
  started_at: number | null;
  completed_at: number | null;
}

const YEARLY = '0 0 1 1 *';
const FINAL = ['success', 'failed', 'skipped'];

describe('schedule policies: overlap and catch-up (real worker, real HTTP)', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let databaseUrl: string;
  const workerEnv = () => ({ DATABASE_URL: databaseUrl, DEMO_COMPONENTS: 'true', PUBLIC_URL: api.url, SCHEDULE_TICK_INTERVAL_MS: '200' });

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    worker = await startWorker(workerEnv());
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  async function create(json: Record<string, unknown>): Promise<{ id: string }> {
    const response = await call(api.url, 'POST', '/schedules', {
      token: ROOT_KEY,
      json: { name: uniqueName('policy'), cron_expr: YEARLY, ...json },
    });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }
  /** A schedule whose fire starts a 2 s background sleep-agent run and follows it: in flight for ~2 s. */
  const sleeper = (overlap_policy: string) =>
    create({ method: 'POST', endpoint: '/agents/sleep-agent/runs', payload: { message: '2', background: true }, overlap_policy });
  const trigger = async (id: string) => {
    const response = await call(api.url, 'POST', `/schedules/${id}/trigger`, { token: ROOT_KEY });
    expect(response.status, response.text).toBe(202);
    return response.body as Fire;
  };
  const fires = async (id: string): Promise<Fire[]> =>
    (await call(api.url, 'GET', `/schedules/${id}/runs?limit=100&sort_order=asc`, { token: ROOT_KEY })).body.data;
  const settled = (id: string, count: number) =>
    waitFor(
      async () => (await fires(id)).filter((fire) => FINAL.includes(fire.status)).length >= count,
      30_000,
      `${count} final fires of ${id}`,
    );
  const running = (id: string) =>
    waitFor(async () => (await fires(id)).some((fire) => fire.status === 'running'), 10_000, `a running fire of ${id}`);

  it('overlap skip (the default): a trigger while the previous fire is in flight is recorded as skipped/overlap', async () => {
    const schedule = await sleeper('skip');
    await trigger(schedule.id);
    await running(schedule.id);
    expect(await trigger(schedule.id)).toMatchObject({ status: 'skipped', reason: 'overlap' });
    await settled(schedule.id, 2);
    expect((await fires(schedule.id)).map((fire) => [fire.status, fire.reason])).toEqual([
      ['success', null],
      ['skipped', 'overlap'],
    ]);
    // Positive control: once the first is done, a trigger fires again.
    await trigger(schedule.id);
    await settled(schedule.id, 3);
    expect((await fires(schedule.id)).at(-1)).toMatchObject({ status: 'success' });
  });

  it('overlap allow: a second fire runs while the first is in flight', async () => {
    const schedule = await sleeper('allow');
    await trigger(schedule.id);
    await running(schedule.id);
    expect(await trigger(schedule.id)).toMatchObject({ status: 'queued', reason: null });
    await waitFor(
      async () => (await fires(schedule.id)).filter((fire) => fire.status === 'running').length === 2,
      10_000,
      'two fires running at once',
    );
    await settled(schedule.id, 2);
    expect((await fires(schedule.id)).map((fire) => fire.status)).toEqual(['success', 'success']);
  });

  it('overlap buffer_one: one fire waits and runs after the one in flight; a third is skipped/buffer_full', async () => {
    const schedule = await sleeper('buffer_one');
    await trigger(schedule.id);
    await running(schedule.id);
    expect(await trigger(schedule.id)).toMatchObject({ status: 'queued' });
    expect(await trigger(schedule.id)).toMatchObject({ status: 'skipped', reason: 'buffer_full' });
    await settled(schedule.id, 3);
    const [first, waiting, dropped] = await fires(schedule.id);
    expect([first.status, waiting.status, dropped.reason]).toEqual(['success', 'success', 'buffer_full']);
    // The buffered fire started only after the first had ended: never two at once.
    expect(waiting.started_at!).toBeGreaterThanOrEqual(first.completed_at!);
  });

  it('a long backlog of one schedule never holds back another schedule’s fire', async () => {
    // 50 missed slots of a schedule whose fires run one at a time (each a 1 s run): 50 queued fires, more
    // than a worker's claim window. Another schedule's trigger must still fire right away.
    const { minute } = awayFromNow();
    const backlog = await create({
      method: 'POST',
      endpoint: '/agents/sleep-agent/runs',
      payload: { message: '1', background: true },
      cron_expr: `${minute} * * * *`,
      catchup_policy: 'all',
      catchup_limit: 50,
    });
    await query(databaseUrl, `UPDATE schedules SET next_run_at = now() - interval '3 days' WHERE id = $1`, [backlog.id]);
    await waitFor(async () => (await fires(backlog.id)).filter((fire) => fire.status === 'queued').length >= 40, 10_000, 'the backlog');
    const other = await create({ method: 'GET', endpoint: '/health' });
    const started = Date.now();
    await trigger(other.id);
    await settled(other.id, 1);
    expect((await fires(other.id))[0]).toMatchObject({ status: 'success' });
    expect(Date.now() - started).toBeLessThan(5_000);
    // Never two of the backlog at once.
    expect((await fires(backlog.id)).filter((fire) => fire.status === 'running').length).toBeLessThanOrEqual(1);
    await call(api.url, 'PATCH', `/schedules/${backlog.id}`, { token: ROOT_KEY, json: { enabled: false } });
  });

  describe('catch-up after every worker was down across several slots', () => {
    /**
     * What a worker finds after an outage: five hourly slots passed while none ran. The slots fall half
     * an hour away from now, so none of them is recent enough to count as on time.
     */
    async function missedFiveHours(catchup: Record<string, unknown>): Promise<Fire[]> {
      const { minute } = awayFromNow();
      const latest = new Date();
      latest.setUTCSeconds(0, 0);
      latest.setUTCMinutes(minute);
      if (latest.getTime() > Date.now()) {
        latest.setUTCHours(latest.getUTCHours() - 1);
      }
      // Every worker stops; while none runs, the schedule's slots pass (its next slot is set back by five slots,
      // which is what hours of downtime leave in the table); then a worker starts again.
      await worker.stop();
      const schedule = await create({ method: 'GET', endpoint: '/health', cron_expr: `${minute} * * * *`, ...catchup });
      await query(databaseUrl, `UPDATE schedules SET next_run_at = $2 WHERE id = $1`, [
        schedule.id,
        new Date(latest.getTime() - 4 * 3600_000),
      ]);
      expect(await fires(schedule.id)).toEqual([]);
      worker = await startWorker(workerEnv());
      await waitFor(
        async () => (await fires(schedule.id)).length >= 5 && (await fires(schedule.id)).every((fire) => FINAL.includes(fire.status)),
        20_000,
        'the catch-up',
      );
      // Not a fixed wait before counting: a probe schedule made due now has fired, so the worker ticked since.
      const probe = await create({ method: 'GET', endpoint: '/health' });
      await query(databaseUrl, `UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE id = $1`, [probe.id]);
      await waitFor(async () => (await fires(probe.id)).some((fire) => fire.status === 'success'), 20_000, 'the probe fire');
      return fires(schedule.id);
    }
    const summary = (history: Fire[]) => history.map((fire) => (fire.status === 'skipped' ? `skipped:${fire.reason}` : fire.status)).sort();

    it('once (the default): the latest missed slot fires, the earlier ones are recorded as missed', async () => {
      const history = await missedFiveHours({});
      expect(summary(history)).toEqual(['skipped:missed', 'skipped:missed', 'skipped:missed', 'skipped:missed', 'success']);
    });

    it('skip: no missed slot fires; each is recorded as missed', async () => {
      const history = await missedFiveHours({ catchup_policy: 'skip' });
      expect(summary(history)).toEqual(Array(5).fill('skipped:missed'));
    });

    it('all, capped by catchup_limit: the latest slots fire oldest first, the rest are recorded as missed', async () => {
      const history = await missedFiveHours({ catchup_policy: 'all', catchup_limit: 3 });
      expect(summary(history)).toEqual(['skipped:missed', 'skipped:missed', 'success', 'success', 'success']);
      const fired = history
        .filter((fire) => fire.status === 'success')
        .sort((a, b) => a.started_at! - b.started_at! || a.due_at - b.due_at);
      expect(fired.map((fire) => fire.due_at)).toEqual([...fired.map((fire) => fire.due_at)].sort((a, b) => a - b));
      expect(Math.max(...history.filter((fire) => fire.status === 'skipped').map((fire) => fire.due_at))).toBeLessThan(fired[0].due_at);
    });
  });

  it('counts skipped fires by reason in /metrics', async () => {
    // The backlog disabled above leaves queued fires: the worker ends each as skipped with no reason (`disabled`).
    await waitFor(
      async () =>
        (await query<{ n: number }>(databaseUrl, `SELECT count(*)::int AS n FROM schedule_runs WHERE status IN ('queued', 'running')`))[0]
          .n === 0,
      30_000,
      'every fire to end',
    );
    const [{ disabled }] = await query<{ disabled: number }>(
      databaseUrl,
      `SELECT count(*)::int AS disabled FROM schedule_runs WHERE status = 'skipped' AND reason IS NULL`,
    );
    expect(disabled).toBeGreaterThanOrEqual(1);
    const metrics = (await call(api.url, 'GET', '/metrics', { token: ROOT_KEY })).text;
    const count = (reason: string) =>
      Number(new RegExp(`^schedule_fires_skipped_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
    expect(count('overlap')).toBeGreaterThanOrEqual(1);
    expect(count('buffer_full')).toBeGreaterThanOrEqual(1);
    expect(count('missed')).toBeGreaterThanOrEqual(11);
    expect(count('disabled')).toBe(disabled);
  });

  it('keeps a disabled_reason given with enabled: false until the schedule is enabled again', async () => {
    const schedule = await create({ method: 'GET', endpoint: '/health' });
    const paused = await call(api.url, 'PATCH', `/schedules/${schedule.id}`, {
      token: ROOT_KEY,
      json: { enabled: false, disabled_reason: 'provider outage, INC-42' },
    });
    expect(paused.body).toMatchObject({ enabled: false, disabled_reason: 'provider outage, INC-42', next_run_at: null });
    expect(
      (await call(api.url, 'PATCH', `/schedules/${schedule.id}`, { token: ROOT_KEY, json: { description: 'still paused' } })).body
        .disabled_reason,
    ).toBe('provider outage, INC-42');
    expect((await call(api.url, 'PATCH', `/schedules/${schedule.id}`, { token: ROOT_KEY, json: { enabled: true } })).body).toMatchObject({
      enabled: true,
      disabled_reason: null,
    });
    expect(
      expectValidationBody(
        await call(api.url, 'PATCH', `/schedules/${schedule.id}`, { token: ROOT_KEY, json: { disabled_reason: 'no enabled:false' } }),
      ),
    ).toEqual([['body', 'disabled_reason']]);
    expect(
      expectValidationBody(
        await call(api.url, 'PATCH', `/schedules/${schedule.id}`, {
          token: ROOT_KEY,
          json: { enabled: false, disabled_reason: 'x'.repeat(501) },
        }),
      ),
    ).toEqual([['body', 'disabled_reason']]);
    expect(
      expectValidationBody(
        await call(api.url, 'POST', '/schedules', {
          token: ROOT_KEY,
          json: { name: uniqueName('p'), cron_expr: YEARLY, endpoint: '/health', overlap_policy: 'queue', catchup_limit: 0 },
        }),
      ),
    ).toEqual([
      ['body', 'overlap_policy'],
      ['body', 'catchup_limit'],
    ]);
  });
});

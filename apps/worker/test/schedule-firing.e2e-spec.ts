import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { awayFromNow, nextDaily } from '../../../test/support/cron';
import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';
import { TcpProxy } from '../../../test/support/tcp-proxy';

interface Attempt {
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  run_id: string | null;
  run_status: string | null;
}

interface Fire {
  id: string;
  trigger: string;
  status: string;
  due_at: number;
  status_code: number | null;
  error: string | null;
  run_id: string | null;
  run_status: string | null;
  attempts: Attempt[];
}

/** A slot that never comes on its own during a test: fires happen only when a test makes one due. */
const YEARLY = '0 0 1 1 *';
const FINISHED = ['success', 'failed', 'skipped'];

describe('schedule firing (real worker, real HTTP)', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let proxy: TcpProxy;
  let proxyUrl: string;
  let databaseUrl: string;

  const workerEnv = () => ({
    DATABASE_URL: databaseUrl,
    PUBLIC_URL: proxyUrl,
    SCHEDULE_TICK_INTERVAL_MS: '200',
    // Fewer slots than the two-worker test's 30 fires, so that both workers must claim some.
    SCHEDULE_CONCURRENCY: '10',
    OS_SECURITY_KEY: ROOT_KEY,
    WORKER_SHUTDOWN_TIMEOUT_SECONDS: '1',
    DEMO_COMPONENTS: 'true',
  });

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '0',
      DEMO_COMPONENTS: 'true',
    });
    // The worker reaches the api through a proxy the retry and timeout tests can cut or stall.
    proxy = new TcpProxy('127.0.0.1', Number(new URL(api.url).port));
    proxyUrl = `http://127.0.0.1:${await proxy.listen()}`;
    worker = await startWorker(workerEnv());
  });
  afterAll(async () => {
    await worker?.stop();
    await proxy?.cut();
    await api?.stop();
  });

  async function createSchedule(
    json: Record<string, unknown>,
    token = ROOT_KEY,
  ): Promise<{ id: string; name: string; next_run_at: number | null }> {
    const response = await call(api.url, 'POST', '/schedules', {
      token,
      json: { name: uniqueName('fire'), cron_expr: YEARLY, method: 'GET', ...json },
    });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  /** What a passing minute does: the schedule's slot is now in the past. */
  async function makeDue(ids: string[], ago = "interval '1 second'"): Promise<void> {
    await query(databaseUrl, `UPDATE schedules SET next_run_at = now() - ${ago} WHERE id = ANY($1)`, [ids]);
  }

  async function fires(scheduleId: string): Promise<Fire[]> {
    return (await call(api.url, 'GET', `/schedules/${scheduleId}/runs?limit=100&sort_order=asc`, { token: ROOT_KEY })).body.data;
  }

  async function finishedFire(scheduleId: string, count = 1, timeoutMs = 20_000): Promise<Fire> {
    let last: Fire[] = [];
    await waitFor(
      async () => (last = await fires(scheduleId)).filter((fire) => FINISHED.includes(fire.status)).length >= count,
      timeoutMs,
      `fire ${count} of ${scheduleId}`,
    );
    return last[count - 1];
  }

  /** Fires a schedule now (as the security key) and waits for that, its first, fire to finish. */
  async function firedNow(scheduleId: string, timeoutMs?: number): Promise<Fire> {
    await call(api.url, 'POST', `/schedules/${scheduleId}/trigger`, { token: ROOT_KEY });
    return finishedFire(scheduleId, 1, timeoutMs);
  }

  /**
   * An observable event instead of a fixed sleep before asserting an absence: a fresh schedule made due
   * now has been fired, so the worker has ticked (and would have fired anything else due) since.
   */
  async function afterATick(): Promise<void> {
    const probe = await createSchedule({ endpoint: '/health' });
    await makeDue([probe.id]);
    expect(await finishedFire(probe.id)).toMatchObject({ status: 'success' });
  }

  async function schedule(id: string) {
    return (await call(api.url, 'GET', `/schedules/${id}`, { token: ROOT_KEY })).body;
  }

  it('fires a due schedule once, records the attempt, and moves next_run_at to the next slot', async () => {
    const { minute, hour } = awayFromNow();
    const created = await createSchedule({ endpoint: '/health', cron_expr: `${minute} ${hour} * * *` });
    await makeDue([created.id]);
    const fire = await finishedFire(created.id);
    expect(fire).toMatchObject({ trigger: 'cron', status: 'success', status_code: 200, error: null });
    // Time-ordered, as every row written per event is: a fire's record lands at the end of its table's index.
    expect(fire.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(fire.attempts).toEqual([
      {
        attempt: 1,
        started_at: expect.any(Number),
        completed_at: expect.any(Number),
        duration_ms: expect.any(Number),
        status_code: 200,
        error: null,
        run_id: null,
        run_status: null,
      },
    ]);
    const after = await schedule(created.id);
    expect(after.next_run_at).toBe(nextDaily(hour, minute));
    await afterATick();
    expect(await fires(created.id)).toHaveLength(1);
    // One info line per fire, for an operator reading the worker's log.
    const logged = worker
      .output()
      .split('\n')
      .filter((line) => line.includes(`schedule fired: ${created.id}`));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(
      new RegExp(`"level":30.*schedule fired: ${created.id} GET /health → success \\(HTTP 200\\), 1 attempt\\(s\\), \\d+ ms`),
    );
  });

  it('fires a schedule that missed many slots while no worker ran once, not once per slot, and records the others as missed', async () => {
    // Hourly at a minute the wall clock does not reach during the test, so only the catch-up fires.
    const created = await createSchedule({ endpoint: '/health', cron_expr: `${awayFromNow().minute} * * * *` });
    await makeDue([created.id], "interval '5 hours'");
    await waitFor(async () => (await fires(created.id)).some((fire) => fire.status === 'success'), 20_000, 'the catch-up fire');
    await afterATick();
    const history = await fires(created.id);
    expect(history.filter((fire) => fire.status !== 'skipped')).toHaveLength(1);
    const missed = history.filter((fire) => fire.status === 'skipped');
    expect(missed.length).toBeGreaterThanOrEqual(4);
    expect(missed.every((fire) => (fire as Fire & { reason: string }).reason === 'missed')).toBe(true);
    // The one fire is for the latest slot; the missed ones are the earlier slots.
    const fired = history.find((fire) => fire.status === 'success')!;
    expect(Math.max(...missed.map((fire) => fire.due_at))).toBeLessThan(fired.due_at);
    expect((await schedule(created.id)).next_run_at).toBeGreaterThan(Date.now() / 1000);
  });

  it("sends the payload as the JSON body with its owner's rights: a root schedule reaches an admin route", async () => {
    // platform:admin only, and a 422 without its body's filter: a 200 says both the rights and the body arrived.
    const created = await createSchedule({ endpoint: '/queue/jobs/requeue', method: 'POST', payload: { filter: { status: ['failed'] } } });
    const triggered = await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
    expect(triggered.status).toBe(202);
    const fire = await finishedFire(created.id);
    expect(fire).toMatchObject({ id: triggered.body.id, trigger: 'manual', status: 'success', status_code: 200 });
  });

  it('acts for its owner alone: a user_id in the payload names nobody else, even for a root schedule', async () => {
    const memory = uniqueName('kept-by-schedule');
    const created = await createSchedule({ endpoint: '/memories', method: 'POST', payload: { memory, user_id: 'alice' } });
    expect(await firedNow(created.id)).toMatchObject({ status: 'success', status_code: 201 });
    const stored = await query<{ user_id: string | null }>(databaseUrl, 'SELECT user_id FROM memories WHERE memory = $1', [memory]);
    expect(stored).toEqual([{ user_id: null }]);
  });

  it('makes a real HTTP call that starts an echo-agent run, as the creating service account', async () => {
    const runner = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run', 'schedules:write'], privileged: true });
    const created = await createSchedule(
      { endpoint: '/agents/echo-agent/runs', method: 'POST', payload: { message: 'scheduled hello' } },
      runner.token,
    );
    expect(created).toMatchObject({ target_type: 'agent', target_id: 'echo-agent' });
    const fire = await firedNow(created.id);
    expect(fire).toMatchObject({ status: 'success', status_code: 200, run_id: expect.any(String), run_status: 'completed' });
    expect(fire.attempts[0]).toMatchObject({ run_id: fire.run_id, run_status: 'completed' });
    const run = await call(api.url, 'GET', `/agents/echo-agent/runs/${fire.run_id}`, { token: runner.token });
    expect(run.status, run.text).toBe(200);
    expect(run.body).toMatchObject({ status: 'completed', content: 'scheduled hello', user_id: `sa:${runner.name}` });
  });

  it('follows a background run to its end', async () => {
    const runner = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run', 'schedules:write'], privileged: true });
    const created = await createSchedule(
      { endpoint: '/agents/sleep-agent/runs', method: 'POST', payload: { message: '2', background: true } },
      runner.token,
    );
    await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
    // While followed, the fire already names the run it started (an operator can look at it).
    await waitFor(
      async () => {
        const [inFlight] = await fires(created.id);
        return inFlight?.status === 'running' && inFlight.run_id !== null && inFlight.status_code === 202;
      },
      10_000,
      'the running fire to name its run',
    );
    const fire = await finishedFire(created.id);
    expect(fire).toMatchObject({ status: 'success', status_code: 202, run_status: 'completed', run_id: expect.any(String) });
    // The attempt lasted as long as the run: it waited for the two-second sleep, not just for the 202.
    expect(fire.attempts[0].duration_ms).toBeGreaterThanOrEqual(2000);
    const run = await call(api.url, 'GET', `/agents/sleep-agent/runs/${fire.run_id}`, { token: runner.token });
    expect(run.body).toMatchObject({ status: 'completed', background: true, user_id: `sa:${runner.name}` });
  });

  /** A schedule whose every run fails (fail-agent), retried as asked. */
  const failingSchedule = (retries: { max_retries: number; retry_delay_seconds: number }) =>
    createSchedule({ endpoint: '/agents/fail-agent/runs', method: 'POST', payload: { message: 'x' }, ...retries });

  it('fails the fire when the run it started fails, retrying it', async () => {
    const created = await failingSchedule({ max_retries: 1, retry_delay_seconds: 1 });
    const fire = await firedNow(created.id);
    expect(fire).toMatchObject({ status: 'failed', run_status: 'failed' });
    expect(fire.error).toMatch(/^Run failed: /);
    expect(fire.attempts).toHaveLength(2);
    expect(new Set(fire.attempts.map((attempt) => attempt.run_id)).size).toBe(2);
    // A failed fire is a warning in the worker's log, with its error.
    const logged = worker
      .output()
      .split('\n')
      .filter((line) => line.includes(`schedule fired: ${created.id}`));
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0])).toMatchObject({ level: 40, status: 'failed', error: expect.stringMatching(/^Run failed: /) });
  });

  it('a pause during a fire drops its remaining retries', async () => {
    const created = await failingSchedule({ max_retries: 3, retry_delay_seconds: 3 });
    await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
    await waitFor(async () => (await fires(created.id))[0]?.attempts.length === 1, 15_000, 'the first attempt');
    const paused = await call(api.url, 'PATCH', `/schedules/${created.id}`, { token: ROOT_KEY, json: { enabled: false } });
    expect(paused.status, paused.text).toBe(200);
    const fire = await finishedFire(created.id);
    expect(fire).toMatchObject({ status: 'failed', run_status: 'failed' });
    expect(fire.error).toMatch(/^Run failed: .*; the schedule was paused or deleted meanwhile, so its remaining retries were dropped$/);
    expect(fire.attempts).toHaveLength(1);
  });

  it('fires with the rights of the owning service account as they are now, never more', async () => {
    const runner = await mintAccount(api.url, ROOT_KEY, {
      scopes: ['agents:run', 'config:read', 'schedules:write', 'schedules:read'],
      privileged: true,
    });
    // A call the owner may not make is refused when the schedule is written, not when it fires.
    const refusedAtCreate = await call(api.url, 'POST', '/schedules', {
      token: runner.token,
      json: { name: uniqueName('fire'), cron_expr: YEARLY, method: 'GET', endpoint: '/service-accounts' },
    });
    expect(refusedAtCreate.status).toBe(403);
    expect(refusedAtCreate.body.detail).toContain('service_accounts:read');
    const allowed = await createSchedule({ endpoint: '/config' }, runner.token);
    await makeDue([allowed.id]);
    expect(await finishedFire(allowed.id)).toMatchObject({ status: 'success', status_code: 200 });
    // The account loses config:read: the next fire is refused (not retried) and the schedule disabled.
    await query(
      databaseUrl,
      `UPDATE service_accounts SET scopes = ARRAY['agents:run', 'schedules:write', 'schedules:read'] WHERE id = $1`,
      [runner.id],
    );
    await makeDue([allowed.id]);
    const fire = await finishedFire(allowed.id, 2);
    expect(fire).toMatchObject({ status: 'failed', status_code: 403 });
    expect(fire.error).toContain('config:read');
    expect(fire.attempts).toHaveLength(1);
    expect(await schedule(allowed.id)).toMatchObject({ enabled: false, disabled_reason: 'owner_lacks_scope:config:read' });
  });

  it('refuses a schedule an agents:run token points at /queue/jobs, and fires the same schedule made with the security key', async () => {
    const runner = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run', 'schedules:write'], privileged: true });
    const refused = await call(api.url, 'POST', '/schedules', {
      token: runner.token,
      json: { name: uniqueName('fire'), cron_expr: YEARLY, method: 'GET', endpoint: '/queue/jobs' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('platform:admin');
    const root = await createSchedule({ endpoint: '/queue/jobs' });
    await makeDue([root.id]);
    expect(await finishedFire(root.id)).toMatchObject({ status: 'success', status_code: 200 });
  });

  it('records a refused call whose answer, clipped for the record, would end inside an emoji', async () => {
    // The api's 422 quotes the session id back; the record keeps its first 500 units, which split a pair.
    const created = await createSchedule({
      method: 'POST',
      endpoint: '/agents/echo-agent/runs',
      payload: { message: 'hi', session_id: '\ud83d\ude00'.repeat(300) },
    });
    await makeDue([created.id]);
    const fire = await finishedFire(created.id);
    expect(fire).toMatchObject({ status: 'failed', status_code: 422 });
    expect(fire.error).toMatch(/^HTTP 422: .*…$/s);
  });

  it('disables the schedule of a revoked service account at the revoke, and never fires it', async () => {
    const creator = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read', 'schedules:write'], privileged: true });
    const created = await createSchedule({ endpoint: '/config' }, creator.token);
    expect((await call(api.url, 'DELETE', `/service-accounts/${creator.id}`, { token: ROOT_KEY })).status).toBe(200);
    expect(await schedule(created.id)).toMatchObject({
      enabled: false,
      next_run_at: null,
      disabled_reason: `owner_revoked:sa:${creator.name}`,
    });
    await makeDue([created.id]);
    await afterATick();
    expect(await fires(created.id)).toEqual([]);
    expect((await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY })).status).toBe(409);
  });

  it('disables at its next fire, without calling, the schedule of an account revoked where the api did not see it', async () => {
    const creator = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read', 'schedules:write'], privileged: true });
    const created = await createSchedule({ endpoint: '/config' }, creator.token);
    // Revoked in the database alone (another api whose revoke listener failed, say): the worker checks before firing.
    await query(databaseUrl, `UPDATE service_accounts SET revoked_at = now() WHERE id = $1`, [creator.id]);
    await makeDue([created.id]);
    const fire = await finishedFire(created.id);
    expect(fire).toMatchObject({ status: 'failed', attempts: [], status_code: null });
    expect(fire.error).toContain('revoked');
    expect(await schedule(created.id)).toMatchObject({
      enabled: false,
      next_run_at: null,
      disabled_reason: `owner_revoked:sa:${creator.name}`,
    });
    expect((await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY })).status).toBe(409);
  });

  it('disables the schedule of an expired service account', async () => {
    const creator = await mintAccount(api.url, ROOT_KEY, { scopes: ['config:read', 'schedules:write'], privileged: true });
    const created = await createSchedule({ endpoint: '/config' }, creator.token);
    await query(databaseUrl, `UPDATE service_accounts SET expires_at = now() - interval '1 second' WHERE id = $1`, [creator.id]);
    await makeDue([created.id]);
    expect(await finishedFire(created.id)).toMatchObject({ status: 'failed', attempts: [] });
    expect(await schedule(created.id)).toMatchObject({ enabled: false, disabled_reason: `owner_expired:sa:${creator.name}` });
  });

  it('never fires a disabled schedule, even when its slot has passed', async () => {
    const created = await createSchedule({ endpoint: '/health', enabled: false });
    await query(databaseUrl, `UPDATE schedules SET next_run_at = now() - interval '1 minute' WHERE id = $1`, [created.id]);
    // Positive control: an enabled schedule due at the same time fires.
    await afterATick();
    expect(await fires(created.id)).toEqual([]);
  });

  it('a call that finds nothing listening (the api not up yet) waits within its attempt, so the fire is not spent', async () => {
    const created = await createSchedule({ endpoint: '/health', timeout_seconds: 20 });
    const port = Number(new URL(proxyUrl).port);
    await proxy.cut();
    try {
      await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
      await waitFor(async () => (await fires(created.id))[0]?.status === 'running', 10_000, 'the fire to start');
      // Said at once, with what to check if the api never comes.
      await waitFor(
        async () => worker.output().includes(`schedule fire: nothing listens at ${new URL(proxyUrl).origin} (PUBLIC_URL)`),
        5_000,
        'the refusal in the log',
      );
      await new Promise((resolve) => setTimeout(resolve, 1500));
    } finally {
      await proxy.listen(port);
    }
    const fire = await finishedFire(created.id);
    expect(fire).toMatchObject({ status: 'success', status_code: 200 });
    expect(fire.attempts.map((attempt) => [attempt.attempt, attempt.status_code, attempt.error])).toEqual([[1, 200, null]]);
    expect(fire.attempts[0].duration_ms).toBeGreaterThanOrEqual(1000);
  });

  it('retries after retry_delay_seconds and records both attempts when the api stayed unreachable for an attempt', async () => {
    const created = await createSchedule({ endpoint: '/health', timeout_seconds: 2, max_retries: 2, retry_delay_seconds: 2 });
    const port = Number(new URL(proxyUrl).port);
    await proxy.cut();
    try {
      await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
      await waitFor(async () => (await fires(created.id))[0]?.attempts.length === 1, 10_000, 'the first attempt');
    } finally {
      await proxy.listen(port);
    }
    const fire = await finishedFire(created.id);
    expect(fire.status).toBe('success');
    expect(fire.attempts.map((attempt) => [attempt.attempt, attempt.status_code])).toEqual([
      [1, null],
      [2, 200],
    ]);
    expect(fire.attempts[0].error).toMatch(/^Request failed: ECONNREFUSED/);
  });

  it('bounds each attempt by timeout_seconds and fails after the last retry', async () => {
    const created = await createSchedule({ endpoint: '/health', timeout_seconds: 1, max_retries: 1, retry_delay_seconds: 1 });
    proxy.stall(true);
    try {
      await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
      const fire = await finishedFire(created.id, 1, 15_000);
      expect(fire).toMatchObject({ status: 'failed', error: 'Timed out after 1s' });
      expect(fire.attempts.map((attempt) => attempt.error)).toEqual(['Timed out after 1s', 'Timed out after 1s']);
      for (const attempt of fire.attempts) {
        expect(attempt.duration_ms).toBeGreaterThanOrEqual(950);
        expect(attempt.duration_ms).toBeLessThan(3000);
      }
    } finally {
      proxy.stall(false);
    }
  });

  it('a retry after an attempt that got no answer asks for the run that attempt may have started, never starting a second', async () => {
    // A sync run of 2.7 s against a 1 s timeout: the first call times out, its run goes on; the retry, under the
    // same Idempotency-Key, is answered with that run and follows it.
    const created = await createSchedule({
      method: 'POST',
      endpoint: '/agents/sleep-agent/runs',
      payload: { message: '2.7' },
      timeout_seconds: 1,
      max_retries: 1,
      retry_delay_seconds: 1,
    });
    const fire = await firedNow(created.id, 20_000);
    expect(fire.attempts[0]).toMatchObject({ error: 'Timed out after 1s', status_code: null });
    expect(fire.attempts).toHaveLength(2);
    const runs = await query<{ id: string }>(databaseUrl, `SELECT id FROM runs WHERE component_id = 'sleep-agent' AND message = '2.7'`);
    expect(runs).toHaveLength(1);
    expect(fire.attempts[1].run_id).toBe(runs[0].id);
  });

  it('a worker holding another INTERNAL_SERVICE_TOKEN than the api: its fires fail with a 401 that names the cause', async () => {
    await worker.stop();
    worker = await startWorker({ ...workerEnv(), INTERNAL_SERVICE_TOKEN: 'a-key-the-api-does-not-hold-0123456789' });
    try {
      const created = await createSchedule({ endpoint: '/config', max_retries: 0 });
      const fire = await firedNow(created.id);
      expect(fire.status).toBe('failed');
      expect(fire.error).toContain(
        'HTTP 401: {"detail":"Schedule credential signed with another key: the api and the worker hold different INTERNAL_SERVICE_TOKEN values',
      );
    } finally {
      await worker.stop();
      worker = await startWorker(workerEnv());
    }
    await expect.poll(() => api.output()).toContain('schedule fire(s) came with a credential signed with another key');
  }, 60_000);

  it('fails a fire whose worker was lost (kill -9 mid-fire) once its heartbeat is stale, and never fires it again', async () => {
    const created = await createSchedule({ endpoint: '/health', timeout_seconds: 60, max_retries: 2 });
    const row = async () =>
      (
        await query<{ status: string; locked_by: string; error: string | null }>(
          databaseUrl,
          'SELECT status, locked_by, error FROM schedule_runs WHERE schedule_id = $1',
          [created.id],
        )
      )[0];
    proxy.stall(true);
    let lost: string | undefined;
    try {
      await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
      await waitFor(async () => (await fires(created.id))[0]?.status === 'running', 10_000, 'the fire to start');
      lost = (await row()).locked_by;
      // The worker really dies mid-fire: no shutdown, nothing recorded.
      expect(await worker.stop('SIGKILL')).toBeNull();
    } finally {
      proxy.stall(false);
    }
    // A worker judges others' fires by its own lock grace: 3 s here, so the test need not wait the default minute.
    worker = await startWorker({ ...workerEnv(), QUEUE_LOCK_GRACE_SECONDS: '3' });
    // Positive control for "only once the heartbeat is stale": the new worker fires other schedules meanwhile.
    const probe = await createSchedule({ endpoint: '/health' });
    await makeDue([probe.id]);
    expect(await finishedFire(probe.id)).toMatchObject({ status: 'success' });
    const fire = await finishedFire(created.id);
    expect(fire).toMatchObject({ status: 'failed', error: 'The worker running this fire was lost; it was not retried' });
    expect((await row()).locked_by).toBe(lost);
    // Failed, not fired again (its retries were not made either): still one fire, no attempt of it finished,
    // and it stays so while the new worker goes on ticking.
    await afterATick();
    expect(await fires(created.id)).toHaveLength(1);
    expect((await fires(created.id))[0]).toMatchObject({ status: 'failed', attempts: [] });
  }, 60_000);

  it('fires each due slot exactly once across two workers over several ticks', async () => {
    const second = await startWorker(workerEnv());
    try {
      const ids: string[] = [];
      for (let i = 0; i < 30; i += 1) {
        ids.push((await createSchedule({ endpoint: '/health' })).id);
      }
      const rounds = 3;
      for (let round = 1; round <= rounds; round += 1) {
        await makeDue(ids);
        await waitFor(
          async () => {
            const [{ done }] = await query<{ done: number }>(
              databaseUrl,
              `SELECT count(*)::int AS done FROM schedule_runs WHERE schedule_id = ANY($1) AND status = 'success'`,
              [ids],
            );
            return done === ids.length * round;
          },
          20_000,
          `round ${round}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 600));
      const perSchedule = await query<{ n: number; slots: number }>(
        databaseUrl,
        `SELECT count(*)::int AS n, count(DISTINCT due_at)::int AS slots FROM schedule_runs WHERE schedule_id = ANY($1) GROUP BY schedule_id`,
        [ids],
      );
      expect(perSchedule).toHaveLength(ids.length);
      expect(perSchedule.every((row) => row.n === rounds && row.slots === rounds)).toBe(true);
      const workers = await query<{ locked_by: string }>(
        databaseUrl,
        `SELECT DISTINCT locked_by FROM schedule_runs WHERE schedule_id = ANY($1)`,
        [ids],
      );
      expect(workers).toHaveLength(2);
    } finally {
      await second.stop();
    }
  });

  // Last: it stops the worker.
  it('on SIGTERM gives a fire until the shutdown deadline, then records it as cut, not lost', async () => {
    const created = await createSchedule({ endpoint: '/health', timeout_seconds: 60, max_retries: 3 });
    proxy.stall(true);
    try {
      await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
      await waitFor(async () => (await fires(created.id))[0]?.status === 'running', 10_000, 'the fire to start');
      const stoppedAt = Date.now();
      await worker.stop();
      // The 1 s deadline, not the fire's 60 s timeout, bounded the wait.
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    } finally {
      proxy.stall(false);
    }
    const [fire] = await fires(created.id);
    expect(fire).toMatchObject({ status: 'failed', error: 'The worker shut down during this attempt' });
    expect(fire.attempts).toHaveLength(1);
  });

  it('on SIGTERM, schedule fires and queue jobs drain side by side within one shutdown deadline', async () => {
    await worker.stop();
    const draining = await startWorker({ ...workerEnv(), WORKER_SHUTDOWN_TIMEOUT_SECONDS: '5' });
    const created = await createSchedule({ endpoint: '/health', timeout_seconds: 60 });
    proxy.stall(true);
    try {
      const runId = (
        await call(api.url, 'POST', '/agents/sleep-agent/runs', { token: ROOT_KEY, json: { message: '30', background: true } })
      ).body.run_id;
      await call(api.url, 'POST', `/schedules/${created.id}/trigger`, { token: ROOT_KEY });
      const jobStatus = async () =>
        (await query<{ status: string }>(databaseUrl, 'SELECT status FROM queue_jobs WHERE id = $1', [runId]))[0].status;
      await waitFor(
        async () => (await fires(created.id))[0]?.status === 'running' && (await jobStatus()) === 'running',
        10_000,
        'the fire and the job to start',
      );
      const stoppedAt = Date.now();
      expect(await draining.stop()).toBe(0);
      // One 5 s deadline for both: draining them one after the other took 10 s and more.
      expect(Date.now() - stoppedAt).toBeLessThan(9000);
      expect(await jobStatus()).toBe('queued');
    } finally {
      proxy.stall(false);
    }
    expect((await fires(created.id))[0]).toMatchObject({ status: 'failed', error: 'The worker shut down during this attempt' });
  });
});

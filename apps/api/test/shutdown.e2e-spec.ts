import { describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { startApi, waitFor } from '../../../test/support/processes';

/**
 * An api told to stop (a rolling update) while it executes runs itself: they may finish for
 * API_SHUTDOWN_TIMEOUT_SECONDS, then they are cancelled, and every caller gets its run's last answer before
 * the process ends, where the orchestrator's kill reset their connections and the runs were failed as lost.
 */
describe('an api stopping while it runs runs itself', () => {
  it('cancels the runs still running after API_SHUTDOWN_TIMEOUT_SECONDS, answers each caller, then exits', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await startApi({
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      DEMO_COMPONENTS: 'true',
      API_SHUTDOWN_TIMEOUT_SECONDS: '3',
      LOG_LEVEL: 'info',
    });
    const running = () => query<{ id: string }>(databaseUrl, `SELECT id FROM runs WHERE status = 'running'`);

    const sync = call(api.url, 'POST', '/agents/sleep-agent/runs', { token: ROOT_KEY, json: { message: '30' } });
    const streamed = await fetch(`${api.url}/agents/sleep-agent/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: '30', stream: true }),
    });
    const events = streamed.text();
    await waitFor(async () => (await running()).length === 2, 15_000, 'both runs to be running');

    const stopping = Date.now();
    api.child.kill('SIGTERM');
    // Not ready from the signal on, while its runs still get their time (3 s): a load balancer sends it nothing new.
    let readiness: unknown;
    await waitFor(
      async () => {
        const answer = await call(api.url, 'GET', '/readyz');
        readiness = answer.body;
        return answer.status === 503;
      },
      2_500,
      '/readyz to answer 503',
    );
    expect(readiness).toEqual({ detail: 'Not ready: the api is stopping' });
    const answered = await sync;
    expect(answered.status, answered.text).toBe(200);
    expect(answered.body).toMatchObject({ status: 'cancelled', error: 'Run was cancelled' });
    expect(await events).toMatch(/event: RunCancelled/);
    // A stop asked for is a clean exit, its last log line written.
    expect(await api.exited).toBe(0);
    // 3 s to finish, then the checkpoint's answer: inside docker's 10 s stop and a pod's grace.
    expect(Date.now() - stopping).toBeLessThan(10_000);
    expect(await running()).toEqual([]);
    expect(await query(databaseUrl, 'SELECT run_id FROM run_leases')).toEqual([]);
    expect(api.output()).toContain('cancelling 2 run(s) still running after API_SHUTDOWN_TIMEOUT_SECONDS');
    // The log says the stop was asked for, and that it ended.
    const said = (text: string) => api.output().indexOf(text);
    expect(said('api stopping (SIGTERM)')).toBeGreaterThan(-1);
    expect(said('api stopping (SIGTERM)')).toBeLessThan(said('cancelling 2 run(s)'));
    expect(said('"msg":"api stopped"')).toBeGreaterThan(said('cancelling 2 run(s)'));
  }, 60_000);

  it('an idle api stopped with SIGTERM exits 0 with its last line written', async () => {
    const api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, LOG_LEVEL: 'info' });
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    expect(api.output()).toContain('"msg":"api stopped"');
  }, 60_000);
});

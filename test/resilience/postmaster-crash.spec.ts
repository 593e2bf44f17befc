import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { query } from '../support/database';
import { call } from '../support/http';
import { OwnPostgres } from '../support/own-postgres';
import { ROOT_KEY } from '../support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../support/processes';

const FINAL = ['completed', 'failed', 'cancelled'];

/**
 * A database crash, not a clean restart: the postmaster is killed with SIGKILL while runs are being
 * posted and executed, then started again (crash recovery). A cluster of its own, so the rest of the
 * suite keeps its database.
 */
describe('PostgreSQL postmaster killed with SIGKILL under load', () => {
  const database = new OwnPostgres();
  let url: string;
  let api: RunningApi;
  let worker: RunningProcess;

  beforeAll(async () => {
    await database.start();
    url = database.url;
    const env = { DATABASE_URL: url, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' };
    api = await startApi(env);
    worker = await startWorker({
      DATABASE_URL: url,
      DEMO_COMPONENTS: 'true',
      QUEUE_LOCK_GRACE_SECONDS: '5',
      QUEUE_POLL_INTERVAL_MS: '200',
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([api?.stop('SIGKILL'), worker?.stop('SIGKILL')]);
    await database.remove();
  });

  it('keeps the worker alive, answers 503 (never 500) while the database is down, and brings every accepted run to a final state', async () => {
    const accepted: string[] = [];
    const statuses = new Map<number, number>();
    const unexpected: string[] = [];
    let posting = true;
    const posters = Array.from({ length: 8 }, async () => {
      while (posting) {
        const response = await call(api.url, 'POST', '/agents/echo-agent/runs', {
          token: ROOT_KEY,
          raw: { body: 'message=hello&background=true', contentType: 'application/x-www-form-urlencoded' },
        }).catch(() => null);
        if (response) {
          if (response.status !== 202 && response.status !== 503) {
            unexpected.push(`${response.status} ${response.text.slice(0, 300)}`);
          }
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (response.status === 202) {
            accepted.push((response.body as { run_id: string }).run_id);
          }
          if (response.status >= 500) {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
      }
    });

    await waitFor(async () => accepted.length >= 100 || unexpected.length > 0, 30_000, '100 accepted runs before the crash');
    expect(unexpected.slice(0, 5)).toEqual([]);
    await database.crash();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const acceptedDuringOutage = accepted.length;
    await database.start();
    await waitFor(async () => accepted.length >= acceptedDuringOutage + 100, 60_000, '100 more accepted runs after recovery');
    posting = false;
    await Promise.all(posters);

    expect(statuses.get(503) ?? 0, 'the outage was seen by the api').toBeGreaterThan(0);
    expect(
      unexpected.slice(0, 5),
      api
        .output()
        .split('\n')
        .filter((line) => line.includes('"level":50'))
        .slice(0, 2)
        .join('\n'),
    ).toEqual([]);
    expect(worker.child.exitCode, `worker output:\n${worker.output().slice(-3000)}`).toBeNull();
    expect(api.child.exitCode).toBeNull();
    // Its LISTEN connection came back on its own: new jobs wake it again instead of waiting for the poll.
    expect(worker.output()).toContain('LISTEN connection lost');
    await waitFor(async () => worker.output().includes('LISTEN connection restored'), 30_000, 'the LISTEN connection to be restored');
    // The outage is said once per queue engine (jobs, schedule fires), and its end: not once per retry of each
    // periodic call, which wrote hundreds of error lines with their stacks in a minute.
    const lines = worker.output().split('\n');
    const said = (text: string) => lines.filter((line) => line.includes(text)).length;
    expect(said('database unreachable: claims, heartbeats and sweeps are retried'), lines.slice(-40).join('\n')).toBeGreaterThanOrEqual(1);
    expect(said('database unreachable: claims, heartbeats and sweeps are retried')).toBeLessThanOrEqual(4);
    expect(said('database answered again after')).toBeGreaterThanOrEqual(1);
    const retriesAsErrors = lines.filter(
      (line) => line.includes('"level":50') && /(claim|heartbeat|sweep|retention cleanup) failed/.test(line),
    );
    expect(retriesAsErrors, retriesAsErrors.slice(0, 2).join('\n')).toEqual([]);

    // Every run the api accepted (answered 202) survived the crash and reaches a final state.
    await expect
      .poll(
        async () =>
          (
            await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM queue_jobs WHERE id = ANY($1) AND status = ANY($2)', [
              accepted,
              FINAL,
            ])
          )[0].n,
        { timeout: 60_000, interval: 500 },
      )
      .toBe(accepted.length);
  }, 180_000);
});

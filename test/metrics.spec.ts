import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from './support/database';
import { call } from './support/http';
import { testPort } from './support/ports';
import { ROOT_KEY } from './support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from './support/processes';

const havePromtool = spawnSync('sh', ['-c', 'command -v promtool']).status === 0;
if (!havePromtool) {
  console.warn('Skipping the /metrics checks: promtool not installed (Debian package prometheus; .ci/run installs it).');
}

/** The README's metrics table: each metric and the processes that serve it. */
function documentedMetrics(): { name: string; servedBy: string[] }[] {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('\n## Metrics\n'), readme.indexOf('\n## ', readme.indexOf('\n## Metrics\n') + 1));
  return [...section.matchAll(/^\| `([a-z_]+)` \|[^|]*\|[^|]*\| ([a-z, ]+) \|/gm)].map(([, name, servedBy]) => ({
    name,
    servedBy: servedBy.split(', '),
  }));
}

function promtool(text: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe.skipIf(!havePromtool)('/metrics of the api and the worker', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let workerMetrics: string;
  let apiMetricsPort: string;
  let runId: string;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    apiMetricsPort = String(await testPort());
    api = await startApi({
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      DEMO_COMPONENTS: 'true',
      API_METRICS_PORT: apiMetricsPort,
    });
    workerMetrics = `http://127.0.0.1:${await testPort()}/metrics`;
    worker = await startWorker({
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      DEMO_COMPONENTS: 'true',
      PUBLIC_URL: api.url,
      WORKER_HEALTH_PORT: new URL(workerMetrics).port,
    });
    // Traffic for every kind of series: a background run the worker completes, its reads, and a 404.
    const posted = await call(api.url, 'POST', '/agents/echo-agent/runs', { token: ROOT_KEY, json: { message: 'hi', background: true } });
    expect(posted.status, posted.text).toBe(202);
    runId = posted.body.run_id;
    await waitFor(
      async () => (await call(api.url, 'GET', `/agents/echo-agent/runs/${runId}`, { token: ROOT_KEY })).body.status === 'completed',
      30_000,
      'the background run to complete',
    );
    expect((await call(api.url, 'GET', '/no-such-route')).status).toBe(404);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  const apiText = async () => (await call(api.url, 'GET', '/metrics', { token: ROOT_KEY })).text;
  const workerText = async () => (await fetch(workerMetrics)).text();

  it('pass promtool check metrics', async () => {
    expect(promtool(await apiText())).toEqual({ status: 0, output: '' });
    expect(promtool(await workerText())).toEqual({ status: 0, output: '' });
  });

  it('contain every metric the README lists, each where the README says', async () => {
    const served: Record<string, string> = { api: await apiText(), worker: await workerText() };
    const documented = documentedMetrics();
    expect(documented.length).toBeGreaterThanOrEqual(20);
    for (const { name, servedBy } of documented) {
      for (const process of servedBy) {
        expect(served[process], `${name} on the ${process}'s /metrics`).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
      }
    }
  });

  it('say which release each process runs', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const text of [await apiText(), await workerText()]) {
      expect(text).toContain(`platform_build_info{version="${version}",node_version="${process.version}"} 1`);
    }
  });

  it('time requests by route pattern and status, never by raw URL', async () => {
    const text = await apiText();
    expect(text).toMatch(/^http_request_duration_seconds_count\{method="POST",route="\/agents\/:agent_id\/runs",status="202"\} 1$/m);
    expect(text).toMatch(
      /^http_request_duration_seconds_count\{method="GET",route="\/agents\/:agent_id\/runs\/:run_id",status="200"\} \d+$/m,
    );
    expect(text).toMatch(/^http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} 1$/m);
    expect(text).not.toContain(runId);
    expect(text).not.toContain('no-such-route');
  });

  it('count the worker’s claims, handler time and heartbeats of the job it ran', async () => {
    const text = await workerText();
    expect(text).toMatch(/^worker_jobs_claimed_total 1$/m);
    expect(text).toMatch(/^worker_job_duration_seconds_count\{job_type="run",outcome="completed"\} 1$/m);
    expect(text).toMatch(/^worker_claims_total\{result="ok"\} [1-9]\d*$/m);
    expect(text).toMatch(/^worker_jobs_running 0$/m);
  });

  it('keeps the api’s /metrics behind platform:admin: anonymous gets 401', async () => {
    const anonymous = await call(api.url, 'GET', '/metrics');
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).not.toContain('http_request_duration_seconds');
  });

  it('serves the same figures without a credential on API_METRICS_PORT, and nothing else there', async () => {
    const metricsUrl = `http://127.0.0.1:${apiMetricsPort}`;
    const scraped = await fetch(`${metricsUrl}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toContain('text/plain');
    const text = await scraped.text();
    for (const name of ['queue_jobs{', 'http_request_duration_seconds_bucket{', 'platform_build_info{', 'schedule_fires_skipped_total']) {
      expect(text).toContain(name);
    }
    expect((await fetch(`${metricsUrl}/config`)).status).toBe(404);
    expect((await fetch(`${metricsUrl}/service-accounts`, { headers: { authorization: `Bearer ${ROOT_KEY}` } })).status).toBe(404);
    expect((await fetch(`${metricsUrl}/metrics`, { method: 'POST' })).status).toBe(405);
  });
});

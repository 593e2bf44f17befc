// Bulk requeue of 10,000 failed jobs in one call: jobs/s of the dry run and of the real run (batches of
// 500, one short transaction each). The jobs are generated straight into queue_jobs, failed two hours ago.
import pg from 'pg';

import { load, machine, median, startApp, startDatabase } from './support.mjs';

const JOBS = Number(process.env.BENCH_BULK_JOBS ?? 10_000);
const ROUNDS = 3;
const KEY = 'bench-os-security-key-000000';

async function failAll(client) {
  await client.query(
    `INSERT INTO queue_jobs (id, component_type, component_id, session_id, payload, status, attempt, max_attempts, error, completed_at, created_at)
     SELECT gen_random_uuid(), 'agent', 'echo-agent', 's' || n, '{"message": "x"}', 'failed', 1, 1, 'provider answered HTTP 503',
            now() - interval '2 hours', now() - interval '3 hours' + n * interval '1 ms'
     FROM generate_series(1, $1) AS n
     ON CONFLICT DO NOTHING`,
    [JOBS],
  );
  await client.query(`UPDATE queue_jobs SET status = 'failed', completed_at = now() - interval '2 hours', max_attempts = 1`);
}

async function requeue(api, dryRun) {
  const started = performance.now();
  const response = await fetch(`${api.url}/queue/jobs/requeue`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ filter: { status: ['failed'], error_contains: 'HTTP 503' }, dry_run: dryRun, limit: JOBS }),
  });
  const body = await response.json();
  const ms = performance.now() - started;
  if (response.status !== 200 || body.changed !== JOBS) {
    throw new Error(`requeue answered ${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
  }
  return ms;
}

export async function benchBulkRequeue() {
  const db = await startDatabase();
  const api = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY });
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const dry = [];
  const real = [];
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      await failAll(client);
      dry.push(await requeue(api, true));
      real.push(await requeue(api, false));
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM queue_jobs WHERE status = 'queued' AND max_attempts = 2`);
      if (rows[0].n !== JOBS) {
        throw new Error(`expected ${JOBS} requeued jobs, found ${rows[0].n}`);
      }
    }
  } finally {
    await client.end();
    await api.stop();
    await db.stop();
  }
  const row = (name, samples) =>
    `| ${name} | ${JOBS} | ${Math.round(median(samples))} ms | ${Math.round(JOBS / (median(samples) / 1000))} |`;
  return [
    `### Bulk requeue (${machine()}, load ${load()})`,
    '',
    `\`POST /queue/jobs/requeue\` over ${JOBS} failed jobs (filter: status and error text), one api, medians of ${ROUNDS} rounds.`,
    '',
    '| call | jobs | time | jobs/s |',
    '|---|---:|---:|---:|',
    row('dry run (count and reasons)', dry),
    row('requeue (batches of 500)', real),
  ].join('\n');
}

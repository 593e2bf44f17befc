// Operator reads at scale: /queue/stats, /metrics and the first page of GET /queue/jobs (unfiltered and
// status=failed, and status=running while five jobs run) with 1,000,000 and then 10,000,000 finished jobs in queue_jobs, generated straight into the
// table (the default 7-day retention holds 1M at under 2 runs/s). Then the kept counts against count(*).
import pg from 'pg';

import { load, machine, median, startApp, startDatabase } from './support.mjs';

const SIZES = (process.env.BENCH_QUEUE_READ_ROWS ?? '1000000,10000000').split(',').map(Number);
const CALLS = 21;
const KEY = 'bench-os-security-key-000000';
const CHUNK = 1_000_000;

const READS = [
  ['GET /queue/stats', '/queue/stats'],
  ['GET /metrics', '/metrics'],
  ['GET /queue/jobs (first page)', '/queue/jobs?limit=20'],
  ['GET /queue/jobs?status=failed (first page)', '/queue/jobs?status=failed&limit=20'],
  ['GET /queue/jobs?status=running (first page)', '/queue/jobs?status=running&limit=20'],
];

/** What an incident looks like in the table: a few jobs running, held by a worker, among all the finished ones. */
const RUNNING = 5;

/** Finished jobs over the past week: mostly completed, 2 % failed, 1 % cancelled. */
async function generate(client, from, to) {
  for (let start = from; start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK);
    await client.query(
      `INSERT INTO queue_jobs (id, component_type, component_id, session_id, payload, status, attempt, max_attempts, error, created_at, updated_at, completed_at)
       SELECT gen_random_uuid(), 'agent', 'echo-agent', 's' || n, '{"message": "x"}',
              CASE WHEN n % 100 < 2 THEN 'failed' WHEN n % 100 = 2 THEN 'cancelled' ELSE 'completed' END,
              1, 1, CASE WHEN n % 100 < 2 THEN 'provider answered HTTP 503' END, t, t, t + interval '1 second'
       FROM generate_series($1::bigint, $2::bigint - 1) AS n, LATERAL (SELECT now() - interval '7 days' * (1 - n::float8 / $3) AS t) AS at`,
      [start, end, SIZES[SIZES.length - 1]],
    );
  }
  await client.query('VACUUM ANALYZE queue_jobs');
}

async function startRunning(client) {
  await client.query(
    `INSERT INTO queue_jobs (id, component_type, component_id, session_id, payload, status, attempt, max_attempts, locked_by, locked_at, heartbeat_at)
     SELECT gen_random_uuid(), 'agent', 'echo-agent', 'running-' || n, '{"message": "x"}', 'running', 1, 1, 'bench-worker', now(), now()
     FROM generate_series(1, $1) AS n`,
    [RUNNING],
  );
}

async function timeRead(api, path) {
  const samples = [];
  for (let i = 0; i < CALLS; i += 1) {
    const started = performance.now();
    const response = await fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${KEY}` } });
    await response.arrayBuffer();
    if (response.status !== 200) {
      throw new Error(`${path} answered ${response.status}`);
    }
    samples.push(performance.now() - started);
  }
  return median(samples.slice(1));
}

export async function benchQueueReads() {
  const db = await startDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const api = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY });
  const rows = [];
  let generated = 0;
  try {
    await startRunning(client);
    for (const size of SIZES) {
      const started = performance.now();
      await generate(client, generated, size);
      generated = size;
      console.error(`queue-reads: ${size} jobs generated in ${Math.round((performance.now() - started) / 1000)} s`);
      const times = [];
      for (const [, path] of READS) {
        times.push(await timeRead(api, path));
      }
      const stats = await (await fetch(`${api.url}/queue/stats`, { headers: { authorization: `Bearer ${KEY}` } })).json();
      const { rows: counted } = await client.query('SELECT status, count(*)::int AS n FROM queue_jobs GROUP BY status');
      const exact = counted.every((row) => stats.counts[row.status] === row.n);
      rows.push({ size, times, exact });
    }
  } finally {
    await api.stop();
    await client.end();
    await db.stop();
  }
  return [
    `## Operator reads at scale (\`node bench/run.mjs queue-reads\`)`,
    '',
    `Machine: ${machine()}; load ${load()} at the end. One api, \`LOG_LEVEL=warn\`; median of ${CALLS - 1} calls after one warm-up, wall time at the client.`,
    '',
    `| finished jobs | ${READS.map(([name]) => name).join(' | ')} | counts equal count(*) |`,
    `|---:|${READS.map(() => '---:').join('|')}|---|`,
    ...rows.map(
      ({ size, times, exact }) =>
        `| ${size.toLocaleString('en')} | ${times.map((ms) => `${ms.toFixed(1)} ms`).join(' | ')} | ${exact ? 'yes' : 'NO'} |`,
    ),
  ].join('\n');
}

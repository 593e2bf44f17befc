// The background POST against its floor: requests/s of `POST /agents/echo-agent/runs` with background=true
// on the built api and on bench/reference-server.mjs (the same statement, nothing else), with autocannon,
// 32 connections, a JSON body and the same svc_pat_ token, on the same database; rounds alternate. Two more
// rows split the gap: the reference's work in a bare Nest app (bench/nest-floor-server.mjs), without and with
// a ValidationPipe, so what is left between them and the api is the api's own work per request. The api groups
// the writes of concurrent POSTs into one statement; a last row groups the reference's writes the same way, so
// that what the grouping is worth and what the api's own work costs read apart.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

import pg from 'pg';

import { load, loadRound, machine, median, startApp, startDatabase } from './support.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 32;
const KEY = 'bench-os-security-key-000000';
// BENCH_BASELINE_CHECKOUT=<dir of another built checkout> adds its api as a row (a before/after run).
const BASELINE = process.env.BENCH_BASELINE_CHECKOUT;
// BENCH_HISTORY=<n> first stores n finished background runs spread over the past week (a session, a run
// and a job each, with random ids as releases before time-ordered ids made them), so that the indexes a POST
// writes into are as large as a busy week leaves them.
const HISTORY = Number(process.env.BENCH_HISTORY ?? 0);
const HISTORY_CHUNK = 100_000;

async function storeHistory(url) {
  const client = new pg.Client(url);
  await client.connect();
  try {
    for (let start = 0; start < HISTORY; start += HISTORY_CHUNK) {
      await client.query(
        `WITH history AS (
           SELECT gen_random_uuid() AS id, gen_random_uuid()::text AS session_id, replace(gen_random_uuid()::text, '-', '') AS trace_id,
                  now() - interval '7 days' * (1 - n::float8 / $3) AS at
           FROM generate_series($1::bigint, $2::bigint - 1) AS n
         ), sessions AS (
           INSERT INTO sessions (id, component_type, component_id, user_id, created_at, updated_at)
           SELECT session_id, 'agent', 'echo-agent', 'sa:history', at, at FROM history
         ), runs AS (
           INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message, content, trace_id, created_at, updated_at, completed_at)
           SELECT id, session_id, 'agent', 'echo-agent', 'sa:history', true, 'completed', 'hello', 'hello', trace_id, at, at, at FROM history
         )
         INSERT INTO queue_jobs (id, component_type, component_id, session_id, user_id, payload, status, attempt, created_at, updated_at, completed_at)
         SELECT id, 'agent', 'echo-agent', session_id, 'sa:history', '{"message": "hello"}', 'completed', 1, at, at, at FROM history`,
        [start, Math.min(HISTORY, start + HISTORY_CHUNK), HISTORY],
      );
    }
    await client.query('VACUUM ANALYZE sessions, runs, queue_jobs');
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
}

async function startFloor(script, url, env = {}) {
  const child = spawn(process.execPath, [script], {
    env: { PATH: process.env.PATH, DATABASE_URL: url, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = await new Promise((resolve) => createInterface({ input: child.stdout }).once('line', (text) => resolve([text])));
  return { url: JSON.parse(line).url, child, stop: () => new Promise((done) => (child.once('exit', done), child.kill('SIGTERM'))) };
}

function post(server, token, db) {
  return loadRound(
    server,
    {
      url: `${server.url}/agents/echo-agent/runs`,
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hello', background: true }),
      connections: CONNECTIONS,
      duration: SECONDS,
    },
    db,
  );
}

export async function benchBackgroundPost() {
  const loadAtStart = load();
  const db = await startDatabase();
  if (HISTORY > 0) {
    await storeHistory(db.url);
  }
  const api = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY, DEMO_COMPONENTS: 'true' });
  const reference = await startFloor('bench/reference-server.mjs', db.url);
  const referenceBatched = await startFloor('bench/reference-server.mjs', db.url, { REFERENCE_BATCHED: 'true' });
  const nest = await startFloor('bench/nest-floor-server.mjs', db.url);
  const nestValidating = await startFloor('bench/nest-floor-server.mjs', db.url, { NEST_FLOOR_VALIDATE: 'true' });
  const baseline = BASELINE
    ? await startApp(`${BASELINE}/dist/apps/api/src/main.js`, { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY, DEMO_COMPONENTS: 'true' })
    : null;
  const servers = { api, reference, nest, nestValidating, referenceBatched, ...(baseline ? { baseline } : {}) };
  const minted = await fetch(`${api.url}/service-accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-background-post', scopes: [{ scope: 'agents:run' }] }),
  });
  const { token } = await minted.json();
  const names = Object.keys(servers);
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  try {
    for (const server of Object.values(servers)) {
      await post(server, token, db); // warm-up: JIT, pools, token caches
    }
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const name of names.map((_, i) => names[(i + round) % names.length])) {
        samples[name].push(await post(servers[name], token, db));
      }
    }
  } finally {
    await Promise.all(Object.values(servers).map((server) => server.stop()));
    await db.stop();
  }
  const rps = (name) => median(samples[name].map((sample) => sample.rps));
  const cpu = (name) => median(samples[name].map((sample) => sample.cpuMicros));
  const databaseCpu = (name) => {
    const micros = median(samples[name].map((sample) => sample.databaseMicros ?? NaN));
    return Number.isNaN(micros) ? 'n/a' : Math.round(micros);
  };
  const row = (label, name) =>
    `| ${label} | ${Math.round(rps(name))} | ${(rps(name) / rps('reference')).toFixed(2)} | ${Math.round(cpu(name))} | ${databaseCpu(name)} |`;
  return [
    `## Background POST against its floor (\`node bench/run.mjs background-post\`)`,
    '',
    `Machine: ${machine()}; load ${loadAtStart} at the start, ${load()} at the end. autocannon, ${CONNECTIONS} connections, ${SECONDS} s per case, JSON body, the same svc_pat_ token (agents:run), the same database${HISTORY > 0 ? ` holding ${HISTORY} finished runs` : ''}; medians of ${ROUNDS} alternating rounds after a warm-up.`,
    '',
    '| server | POSTs/s | ratio | server CPU µs/request | PostgreSQL CPU µs/request |',
    '|---|---:|---:|---:|---:|',
    row('reference (Fastify + pg, one statement)', 'reference'),
    row('the same in a bare Nest app', 'nest'),
    row('the same in a bare Nest app, with a ValidationPipe', 'nestValidating'),
    row('the api', 'api'),
    ...(baseline ? [row(`the api of ${BASELINE}`, 'baseline')] : []),
    row('the reference, its writes grouped as the api groups them', 'referenceBatched'),
  ].join('\n');
}

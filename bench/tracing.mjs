// Tracing's cost: the background POST (requests/s) and enqueue→start latency with every run traced
// (TRACES_ENABLED=true, no OTLP exporter) against tracing off (TRACES_ENABLED=false). Each setting has
// its own api, worker and database (one embedded PostgreSQL server each), up together; rounds alternate.
// The POST is measured twice: on the api alone (the worker stopped, as bench/background-post.mjs does),
// and while the worker runs what is posted, which on two cores also charges the worker's spans to it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import autocannon from 'autocannon';
import pg from 'pg';

import { load, machine, median, startApp, startDatabase } from './support.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LATENCY_RUNS = Number(process.env.BENCH_LATENCY_RUNS ?? 100);
const CONNECTIONS = 32;
const KEY = 'bench-os-security-key-000000';

// The component answers with the moment it started (the wall clock every process shares), so the
// bench reads enqueue→start from the runs themselves, traced or not.
const COMPONENTS = join(mkdtempSync(join(tmpdir(), 'bench-tracing-')), 'components.mjs');
writeFileSync(
  COMPONENTS,
  `export default [{ kind: 'agent', id: 'clock-agent', name: 'Clock', run: async () => String(performance.timeOrigin + performance.now()) }];`,
);

async function startStack(tracesEnabled) {
  const db = await startDatabase();
  const env = { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY, COMPONENTS_MODULE: COMPONENTS, TRACES_ENABLED: String(tracesEnabled) };
  const api = await startApp('dist/apps/api/src/main.js', env);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  let worker = null;
  return {
    api,
    client,
    startWorker: async () => {
      worker = await startApp('dist/apps/worker/src/main.js', env, { portVariable: 'WORKER_HEALTH_PORT', healthPath: '/readyz' });
    },
    stopWorker: async () => {
      await worker?.stop();
      worker = null;
    },
    stop: async () => {
      await client.end();
      await Promise.all([worker?.stop(), api.stop()]);
      await db.stop();
    },
  };
}

const post = (api) => ({
  url: `${api.url}/agents/clock-agent/runs`,
  method: 'POST',
  headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
  body: JSON.stringify({ message: 'hello', background: true }),
});

async function throughput(stack) {
  const result = await autocannon({ ...post(stack.api), connections: CONNECTIONS, duration: SECONDS });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${stack.api.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  }
  return result.requests.average;
}

/** One round of a setting: POSTs on the api alone, then with the worker running them, then enqueue→start. */
async function round(stack) {
  const alone = await throughput(stack);
  await stack.startWorker();
  try {
    await drained(stack);
    const withWorker = await throughput(stack);
    await drained(stack);
    return { alone, withWorker, ...(await latency(stack)) };
  } finally {
    await stack.stopWorker();
  }
}

/** Waits until the worker has finished every queued run, so the next measurement starts from an idle queue. */
async function drained(stack) {
  for (;;) {
    const { rows } = await stack.client.query(`SELECT count(*)::int AS open FROM runs WHERE status IN ('queued', 'running')`);
    if (rows[0].open === 0) {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Median and p95 milliseconds from sending a background POST to its component starting, one run at a time. */
async function latency(stack) {
  const { url, method, headers, body } = post(stack.api);
  const sent = new Map();
  for (let i = 0; i < LATENCY_RUNS; i += 1) {
    const at = performance.timeOrigin + performance.now();
    const response = await fetch(url, { method, headers, body });
    sent.set((await response.json()).run_id, at);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await drained(stack);
  const { rows } = await stack.client.query(`SELECT id, content FROM runs WHERE id = ANY ($1::uuid[])`, [[...sent.keys()]]);
  const waits = rows.map((row) => Number(row.content) - sent.get(row.id)).sort((a, b) => a - b);
  return { p50: median(waits), p95: waits[Math.floor(waits.length * 0.95)] };
}

export async function benchTracing() {
  const loadAtStart = load();
  const stacks = { on: await startStack(true), off: await startStack(false) };
  const samples = { on: [], off: [] };
  try {
    for (const stack of Object.values(stacks)) {
      await round(stack); // warm-up: JIT, pools
    }
    for (let i = 0; i < ROUNDS; i += 1) {
      for (const name of i % 2 === 0 ? ['on', 'off'] : ['off', 'on']) {
        samples[name].push(await round(stacks[name]));
      }
    }
  } finally {
    await Promise.all(Object.values(stacks).map((stack) => stack.stop()));
  }
  const of = (name, field) => median(samples[name].map((sample) => sample[field]));
  const ratio = (name, field) => (of(name, field) / of('off', field)).toFixed(2);
  const row = (name, label) =>
    `| ${label} | ${Math.round(of(name, 'alone'))} | ${ratio(name, 'alone')} | ${Math.round(of(name, 'withWorker'))} | ${ratio(name, 'withWorker')} | ${of(name, 'p50').toFixed(1)} | ${of(name, 'p95').toFixed(1)} |`;
  return [
    '## Tracing on against off (`node bench/run.mjs tracing`)',
    '',
    `Machine: ${machine()}; load ${loadAtStart} at the start, ${load()} at the end. Background POSTs: autocannon, ${CONNECTIONS} connections, ${SECONDS} s, on the api alone (worker stopped) and while the worker runs them. Enqueue→start: ${LATENCY_RUNS} POSTs one at a time (20 ms apart), from sending the POST to the component starting. Each setting has its own api, worker and database; medians of ${ROUNDS} alternating rounds after a warm-up. No OTLP exporter.`,
    '',
    '| tracing | POSTs/s, api alone | ratio | POSTs/s, worker running | ratio | enqueue→start p50 ms | p95 ms |',
    '|---|---:|---:|---:|---:|---:|---:|',
    row('off', 'off (TRACES_ENABLED=false)'),
    row('on', 'on (every run traced, stored in batches)'),
  ].join('\n');
}

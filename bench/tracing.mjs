// Tracing's cost: the background POST (requests/s) and enqueue→start latency with every run traced
// (TRACES_ENABLED=true, no OTLP exporter) against tracing off (TRACES_ENABLED=false). Each setting has
// its own api, worker and database (one embedded PostgreSQL server each), up together.
// The POST is measured twice: on the api alone (the worker stopped, as bench/background-post.mjs does),
// and while the worker runs what is posted, which on two cores also charges the worker's spans to it.
// Tracing costs a few percent, less than this shared machine's drift over a minute, so each ratio is
// taken within pairs of short rounds run back to back (which setting goes first alternates), and the
// median of the pairs' ratios is reported with their range.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import pg from 'pg';

import { load, loadRound, machine, median, startApp, startDatabase } from './support.mjs';

const PAIRS = Number(process.env.BENCH_PAIRS ?? 9);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const LATENCY_ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
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
    db,
    client,
    startWorker: async () => {
      worker = await startApp('dist/apps/worker/src/main.js', env, { portVariable: 'WORKER_HEALTH_PORT', healthPath: '/readyz' });
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

/**
 * POSTs/s of one round, and the CPU (api and PostgreSQL) a POST cost in it: on two shared cores the throughput moves
 * with other tenants, while the work a POST takes moves much less, so the CPU tells a cost of a few percent better.
 */
async function throughput(stack) {
  const round = await loadRound(stack.api, { ...post(stack.api), connections: CONNECTIONS, duration: SECONDS }, stack.db);
  const dbMicros = round.databaseMicros ?? 0; // a DATABASE_URL of the caller's: its CPU is not ours to read
  return { rps: round.rps, cpuMicros: round.cpuMicros + dbMicros, apiMicros: round.cpuMicros, dbMicros };
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

/** POSTs/s of each setting in PAIRS back-to-back pairs, each measured from an idle queue when `drain` is set. */
async function pairs(stacks, { drain }) {
  const measured = [];
  for (let i = 0; i < PAIRS; i += 1) {
    const pair = {};
    for (const name of i % 2 === 0 ? ['on', 'off'] : ['off', 'on']) {
      if (drain) {
        await Promise.all(Object.values(stacks).map(drained));
      }
      pair[name] = await throughput(stacks[name]);
    }
    measured.push(pair);
  }
  return measured;
}

export async function benchTracing() {
  const loadAtStart = load();
  const stacks = { on: await startStack(true), off: await startStack(false) };
  const samples = { on: [], off: [] };
  let alone, withWorker;
  try {
    for (const stack of Object.values(stacks)) {
      await throughput(stack); // warm-up: JIT, pools
    }
    alone = await pairs(stacks, { drain: false });
    await Promise.all(Object.values(stacks).map((stack) => stack.startWorker()));
    for (const stack of Object.values(stacks)) {
      await drained(stack);
      await throughput(stack); // warm-up of the worker
    }
    withWorker = await pairs(stacks, { drain: true });
    await Promise.all(Object.values(stacks).map(drained));
    for (let i = 0; i < LATENCY_ROUNDS; i += 1) {
      for (const name of i % 2 === 0 ? ['on', 'off'] : ['off', 'on']) {
        samples[name].push(await latency(stacks[name]));
      }
    }
  } finally {
    await Promise.all(Object.values(stacks).map((stack) => stack.stop()));
  }
  const throughputCells = (measured, name) => {
    const rate = Math.round(median(measured.map((pair) => pair[name].rps)));
    if (name === 'off') {
      return `${rate} | 1.00`;
    }
    const ratios = measured.map((pair) => pair.on.rps / pair.off.rps).sort((a, b) => a - b);
    return `${rate} | ${median(ratios).toFixed(2)} (${ratios[0].toFixed(2)}–${ratios.at(-1).toFixed(2)})`;
  };
  // CPU a POST on the api alone: off's over on's, pair by pair, is the throughput two saturated cores would allow.
  const cpuCells = (name) => {
    const of = (field) => Math.round(median(alone.map((pair) => pair[name][field])));
    const micros = `${of('cpuMicros')} (${of('apiMicros')} + ${of('dbMicros')})`;
    const ratios = alone.map((pair) => pair.off.cpuMicros / pair.on.cpuMicros).sort((a, b) => a - b);
    return `${micros} | ${name === 'off' ? '1.00' : `${median(ratios).toFixed(2)} (${ratios[0].toFixed(2)}–${ratios.at(-1).toFixed(2)})`}`;
  };
  const of = (name, field) => median(samples[name].map((sample) => sample[field]));
  const row = (name, label) =>
    `| ${label} | ${throughputCells(alone, name)} | ${cpuCells(name)} | ${throughputCells(withWorker, name)} | ${of(name, 'p50').toFixed(1)} | ${of(name, 'p95').toFixed(1)} |`;
  return [
    '## Tracing on against off (`node bench/run.mjs tracing`)',
    '',
    `Machine: ${machine()}; load ${loadAtStart} at the start, ${load()} at the end. Background POSTs: autocannon, ${CONNECTIONS} connections, ${PAIRS} pairs of ${SECONDS} s rounds, on and off back to back (which goes first alternates), first on the api alone (workers stopped), then with the workers running them (each round from an idle queue). POSTs/s are medians; a ratio is the median of the pairs' ratios, their range in brackets. Enqueue→start: ${LATENCY_RUNS} POSTs one at a time (20 ms apart), from sending the POST to the component starting, medians of ${LATENCY_ROUNDS} alternating rounds. Each setting has its own api, worker and database; a warm-up first. No OTLP exporter. CPU a POST: the api's and its PostgreSQL's (every server process), on the api alone, with each part's median in brackets; its ratio is off's CPU over on's, the median of the pairs'.`,
    '',
    '| tracing | POSTs/s, api alone | ratio | µs CPU a POST, api alone | ratio | POSTs/s, worker running | ratio | enqueue→start p50 ms | p95 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    row('off', 'off (TRACES_ENABLED=false)'),
    row('on', 'on (every run traced, stored with its run)'),
  ].join('\n');
}

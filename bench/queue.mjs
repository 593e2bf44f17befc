// Queue bench: our queue against graphile-worker and pg-boss on the same PostgreSQL, doing the same no-op work.
// Throughput: JOBS jobs enqueued in bulk, then drained by one and by two worker processes (concurrency 10 each).
// Latency: 1,000 single jobs 20 ms apart into an idle worker; enqueue-to-start p50/p95/p99 (with 200, a p99 was the
// second-worst job, one stray pause of this shared machine).
// Every system is measured in every round, back to back case by case, in turning order; the table reports medians
// of the rounds, and each ratio as the median of the rounds' own ratios.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

import pg from 'pg';

import { systems } from './queue-systems.mjs';
import { load, machine, median, startApp, startDatabase } from './support.mjs';

const JOBS = Number(process.env.BENCH_QUEUE_JOBS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = 10;
const LATENCY_JOBS = Number(process.env.BENCH_LATENCY_JOBS ?? 1000);
const LATENCY_GAP_MS = 20;

const E2E_RUNS = Number(process.env.BENCH_E2E_RUNS ?? 5000);
const E2E_CONNECTIONS = 32;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function startWorker(url, name) {
  const child = spawn(process.execPath, ['bench/queue-worker.mjs', name, String(CONCURRENCY)], {
    env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = [];
  const waiters = [];
  createInterface({ input: child.stdout }).on('line', (text) => {
    lines.push(JSON.parse(text));
    waiters.splice(0).forEach((wake) => wake());
  });
  const until = async (predicate) => {
    while (!predicate(lines)) {
      await new Promise((wake) => waiters.push(wake));
    }
  };
  return {
    lines,
    ready: until((seen) => seen.some((line) => line.ready)),
    until,
    stop: () => new Promise((done) => (child.once('exit', done), child.kill('SIGTERM'))),
  };
}

async function drainUntilEmpty(system, db) {
  while (await system.pending(db)) {
    await sleep(system.pendingEveryMs);
  }
  return Date.now();
}

async function throughput(system, url, db, workerCount) {
  await system.reset(url);
  await system.enqueueMany(
    url,
    Array.from({ length: JOBS }, (_, i) => ({ i })),
  );
  const workers = Array.from({ length: workerCount }, () => startWorker(url, system.key));
  await Promise.all(workers.map((worker) => worker.ready));
  const finishedAt = await drainUntilEmpty(system, db);
  const firstStart = Math.min(...workers.flatMap((worker) => worker.lines.filter((line) => line.first).map((line) => line.first)));
  await Promise.all(workers.map((worker) => worker.stop()));
  return JOBS / ((finishedAt - firstStart) / 1000);
}

async function latency(system, url) {
  await system.reset(url);
  const worker = startWorker(url, system.key);
  await worker.ready;
  const sender = await system.sender(url);
  await sleep(1000); // idle: whatever it polls or listens on has settled
  for (let i = 0; i < LATENCY_JOBS; i++) {
    await sender.send({ t: Date.now() });
    await sleep(LATENCY_GAP_MS);
  }
  await sender.close();
  await worker.until((lines) => lines.filter((line) => line.latency !== undefined).length >= LATENCY_JOBS);
  await worker.stop();
  const sorted = worker.lines
    .filter((line) => line.latency !== undefined)
    .map((line) => line.latency)
    .sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

/**
 * End to end: E2E_RUNS background runs of echo-agent POSTed (form-encoded, E2E_CONNECTIONS at a
 * time) to the built api while one built worker (WORKER_CONCURRENCY 10) runs them; runs/s from the
 * first POST until every job is completed, and the accept rate of the POSTs alone.
 */
async function endToEnd(url, db) {
  await db.query('TRUNCATE queue_jobs, runs, sessions');
  const env = { DATABASE_URL: url, DB_MIGRATE: 'false', DEMO_COMPONENTS: 'true', WORKER_CONCURRENCY: String(CONCURRENCY) };
  const api = await startApp('dist/apps/api/src/main.js', env);
  const worker = await startApp('dist/apps/worker/src/main.js', env, { portVariable: 'WORKER_HEALTH_PORT', healthPath: '/readyz' });
  try {
    const started = performance.now();
    let posted = 0;
    await Promise.all(
      Array.from({ length: E2E_CONNECTIONS }, async () => {
        while (posted < E2E_RUNS) {
          posted += 1;
          const response = await fetch(`${api.url}/agents/echo-agent/runs`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: 'message=hello&background=true',
          });
          if (response.status !== 202) {
            throw new Error(`POST answered ${response.status}: ${await response.text()}`);
          }
          await response.arrayBuffer();
        }
      }),
    );
    const accepted = performance.now();
    while ((await db.query(`SELECT count(*)::int AS n FROM queue_jobs WHERE status = 'completed'`)).rows[0].n < E2E_RUNS) {
      await sleep(50);
    }
    const completed = performance.now();
    return { runs: E2E_RUNS / ((completed - started) / 1000), accepts: E2E_RUNS / ((accepted - started) / 1000) };
  } finally {
    await Promise.all([api.stop(), worker.stop()]);
  }
}

export async function benchQueue() {
  const loadAtStart = load();
  const database = await startDatabase();
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  // BENCH_QUEUE_SYSTEMS=ours,graphile narrows a tuning run; the report needs graphile-worker as the baseline.
  const only = process.env.BENCH_QUEUE_SYSTEMS?.split(',');
  const entries = Object.entries(systems)
    .filter(([key]) => !only || only.includes(key))
    .map(([key, system]) => ({ ...system, key }));
  const results = Object.fromEntries(entries.map((system) => [system.key, { one: [], two: [], p50: [], p95: [], p99: [] }]));
  const e2e = { runs: [], accepts: [] };
  try {
    for (const system of entries) {
      await system.install(database.url);
    }
    for (let round = 0; round < ROUNDS; round++) {
      // Each case runs every system back to back, the order turning with the round and the case (with two
      // systems, ABBA), so that a ratio compares measurements seconds apart: this shared machine drifts more over a round.
      const rotated = (shift) => entries.map((_, i) => entries[(i + shift) % entries.length]);
      for (const [field, workerCount, shift] of [
        ['one', 1, round],
        ['two', 2, round + 1],
      ]) {
        for (const system of rotated(shift)) {
          results[system.key][field].push(await throughput(system, database.url, db, workerCount));
        }
      }
      for (const system of rotated(round)) {
        const { p50, p95, p99 } = await latency(system, database.url);
        const result = results[system.key];
        result.p50.push(p50);
        result.p95.push(p95);
        result.p99.push(p99);
      }
      console.error(`round ${round + 1}: queues done`);
      if (E2E_RUNS > 0) {
        const { runs, accepts } = await endToEnd(database.url, db);
        e2e.runs.push(runs);
        e2e.accepts.push(accepts);
        console.error(`round ${round + 1}: end to end done`);
      }
    }
  } finally {
    await db.end();
    await database.stop();
  }
  return report(entries, results, e2e, loadAtStart);
}

function report(entries, results, e2e, loadAtStart) {
  const baseline = results[entries.find((system) => system.name === 'graphile-worker').key];
  // A round's ratio divides two measurements taken back to back; the median of the rounds' ratios, their range in brackets.
  const ratio = (r, field) => {
    if (r === baseline) {
      return '1.00';
    }
    const ratios = r[field].map((rate, round) => rate / baseline[field][round]).sort((a, b) => a - b);
    return ratios.length === 1
      ? ratios[0].toFixed(2)
      : `${median(ratios).toFixed(2)} (${ratios[0].toFixed(2)}–${ratios.at(-1).toFixed(2)})`;
  };
  const rows = entries.map((system) => {
    const r = results[system.key];
    const p50 = median(r.p50);
    const p99 = median(r.p99);
    return `| ${system.name} | ${Math.round(median(r.one))} | ${Math.round(median(r.two))} | ${ratio(r, 'one')} | ${ratio(r, 'two')} | ${p50} | ${median(r.p95)} | ${p99} | ${(p50 / median(baseline.p50)).toFixed(2)} | ${(p99 / median(baseline.p99)).toFixed(2)} |`;
  });
  return [
    `## Queue (\`node bench/run.mjs queue\`)`,
    '',
    `Machine: ${machine()}; load average (1/5/15 min) ${loadAtStart} at the start, ${load()} at the end.`,
    '',
    `${JOBS} no-op jobs enqueued in bulk, then drained by 1 and by 2 worker processes at concurrency ${CONCURRENCY}; latency: ${LATENCY_JOBS} single jobs ${LATENCY_GAP_MS} ms apart into an idle worker (enqueue to handler start). Medians of ${ROUNDS} rounds. In each round every system drains the same jobs back to back, one case at a time, the order turning; a throughput ratio (against graphile-worker) is the median of the rounds' ratios, their range in brackets; the p50 and p99 ratios are of the medians.`,
    '',
    '| queue | 1 worker jobs/s | 2 workers jobs/s | 1 worker ratio | 2 workers ratio | p50 ms | p95 ms | p99 ms | p50 ratio | p99 ratio |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    ...(e2e.runs.length === 0 ? [] : endToEndReport(e2e)),
  ].join('\n');
}

function endToEndReport(e2e) {
  return [
    '',
    `End to end: ${E2E_RUNS} background runs of \`echo-agent\` POSTed form-encoded over HTTP (${E2E_CONNECTIONS} at a time) to the built api, one built worker at concurrency ${CONCURRENCY}, LOG_LEVEL=warn; median of ${ROUNDS} rounds.`,
    '',
    '| case | runs/s until all completed | POSTs accepted/s |',
    '|---|---:|---:|',
    `| ${E2E_RUNS} background runs, api + 1 worker | ${Math.round(median(e2e.runs))} | ${Math.round(median(e2e.accepts))} |`,
  ];
}

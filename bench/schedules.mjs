// Schedules bench: 1,000 schedules due at the same instant (one minute boundary), fired by one worker process and
// then by two (SCHEDULE_CONCURRENCY and SCHEDULE_TICK_INTERVAL_MS at their defaults, 100 and 1000 ms). Each fire is a
// real HTTP call from the worker to the api (GET /health with the schedule's credential). Every schedule runs each
// minute, so each round measures the workers' first minute after they started and the next one (steady state;
// BENCH_SCHEDULE_MINUTES, default 2). Reported from the database per minute: due → fired (slot time to the worker
// starting the call) p50/p99/max, fires/s from the first start to the last completion, a check that every schedule
// fired exactly once, and the target: with one worker, every one fired exactly once and due → fired p99 ≤ 1 s.
// Each schedule starts with BENCH_SCHEDULE_HISTORY finished fires (default 1,000) as a deployment that has been
// running keeps them. BENCH_SCHEDULE_WORKERS=1 runs the one-worker round only.
import pg from 'pg';

import { cpuMillis, load, machine, startApp, startDatabase } from './support.mjs';

const SCHEDULES = Number(process.env.BENCH_SCHEDULES ?? 1000);
const WORKER_ROUNDS = (process.env.BENCH_SCHEDULE_WORKERS ?? '1,2').split(',').map(Number);
const MINUTES = Number(process.env.BENCH_SCHEDULE_MINUTES ?? 2);
/** Finished fires each schedule has already made (1,000: 17 hours of a per-minute schedule), as a running deployment keeps them. */
const HISTORY = Number(process.env.BENCH_SCHEDULE_HISTORY ?? 1000);
const TARGET_P99_MS = 1000;
const ROOT_KEY = 'bench-os-security-key-000000000001';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function createSchedules(apiUrl) {
  for (let i = 0; i < SCHEDULES; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, SCHEDULES - i) }, async (_, j) => {
        const response = await fetch(`${apiUrl}/schedules`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ROOT_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `bench-${i + j}`, cron_expr: '* * * * *', endpoint: '/health', method: 'GET' }),
        });
        if (response.status !== 201) {
          throw new Error(`create answered ${response.status}: ${await response.text()}`);
        }
      }),
    );
  }
}

/** Each schedule's past fires, one a minute back from now, as the fire history of a deployment that has been running. */
async function addHistory(db) {
  await db.query(
    `INSERT INTO schedule_runs (id, schedule_id, trigger, status, due_at, started_at, completed_at, status_code, created_at)
     SELECT gen_random_uuid(), s.id, 'cron', 'success', slot, slot, slot + interval '50 milliseconds', 200, slot
     FROM schedules s, generate_series(1, $1) g, LATERAL (SELECT date_trunc('minute', now()) - make_interval(mins => g) AS slot) t
     WHERE s.name LIKE 'bench-%'`,
    [HISTORY],
  );
  await db.query('ANALYZE schedule_runs');
}

/** Each worker makes a few calls first, so lazy module loading (fetch) is not billed to the burst. */
async function warmUp(db, apiUrl, workerCount) {
  const response = await fetch(`${apiUrl}/schedules`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ROOT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `warm-up-${Date.now()}`, cron_expr: '0 0 1 1 *', endpoint: '/health', method: 'GET' }),
  });
  const { id } = await response.json();
  let warmed = 0;
  while (warmed < workerCount) {
    await fetch(`${apiUrl}/schedules/${id}/trigger`, { method: 'POST', headers: { authorization: `Bearer ${ROOT_KEY}` } });
    await sleep(100);
    ({
      rows: [{ warmed }],
    } = await db.query(`SELECT count(DISTINCT locked_by)::int AS warmed FROM schedule_runs WHERE schedule_id = $1 AND status = 'success'`, [
      id,
    ]));
  }
  await fetch(`${apiUrl}/schedules/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ROOT_KEY}` } });
}

/** The fires of one slot, found through the (schedule_id, created_at) index: a fire is created once its slot is due, and a scan of the history would compete with the burst. */
const FIRES_OF_SLOT = `schedule_runs WHERE schedule_id IN (SELECT id FROM schedules WHERE name LIKE 'bench-%') AND created_at >= $1 AND due_at = $1`;

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** One minute's burst: waits for `due`, then reads every fire of it back from the database. */
async function measureMinute(db, api, workers, due) {
  // CPU is counted from just before the boundary: the wait for it (idle polling) is not the fires' cost.
  await sleep(Math.max(0, due.getTime() - Date.now() - 500));
  const cpuBefore = { api: cpuMillis(api.child.pid), workers: workers.map((worker) => cpuMillis(worker.child.pid)) };
  let finished = 0;
  while (finished < SCHEDULES) {
    await sleep(200);
    ({
      rows: [{ finished }],
    } = await db.query(`SELECT count(*)::int AS finished FROM ${FIRES_OF_SLOT} AND status IN ('success', 'failed')`, [due]));
  }
  const cpu = {
    api: cpuMillis(api.child.pid) - cpuBefore.api,
    workers: workers.reduce((sum, worker, i) => sum + cpuMillis(worker.child.pid) - cpuBefore.workers[i], 0),
  };
  const { rows } = await db.query(
    `SELECT extract(epoch FROM started_at - due_at) * 1000 AS lag_ms, extract(epoch FROM created_at - due_at) * 1000 AS queued_ms,
            extract(epoch FROM completed_at - started_at) * 1000 AS call_ms, started_at, completed_at, status, schedule_id
     FROM ${FIRES_OF_SLOT}`,
    [due],
  );
  const lags = rows.map((row) => Number(row.lag_ms)).sort((a, b) => a - b);
  const queued = rows.map((row) => Number(row.queued_ms)).sort((a, b) => a - b);
  const calls = rows.map((row) => Number(row.call_ms)).sort((a, b) => a - b);
  const first = Math.min(...rows.map((row) => row.started_at.getTime()));
  const last = Math.max(...rows.map((row) => row.completed_at.getTime()));
  return {
    fires: rows.length,
    distinct: new Set(rows.map((row) => row.schedule_id)).size,
    failed: rows.filter((row) => row.status !== 'success').length,
    p50: percentile(lags, 50),
    p99: percentile(lags, 99),
    max: lags[lags.length - 1],
    queuedP99: percentile(queued, 99),
    callP50: percentile(calls, 50),
    perSecond: rows.length / ((last - first) / 1000),
    workerCpuPerFire: cpu.workers / rows.length,
    apiCpuPerFire: cpu.api / rows.length,
  };
}

/**
 * The workers' first minute (just started, a few warm-up calls made) and the next ones (every
 * schedule is `* * * * *`, so each minute is the same burst again, met by a worker that has run).
 */
async function round(db, url, api, workerCount) {
  const apiUrl = api.url;
  // A minute boundary at least 20 s away, so the workers have booted before it.
  const due = new Date(Math.ceil((Date.now() + 20_000) / 60_000) * 60_000);
  await db.query(`UPDATE schedules SET next_run_at = $1 WHERE name LIKE 'bench-%'`, [due]);
  const workerEnv = {
    DATABASE_URL: url,
    PUBLIC_URL: apiUrl,
    OS_SECURITY_KEY: ROOT_KEY,
    ...(process.env.BENCH_SCHEDULE_CONCURRENCY ? { SCHEDULE_CONCURRENCY: process.env.BENCH_SCHEDULE_CONCURRENCY } : {}),
  };
  const workers = await Promise.all(
    Array.from({ length: workerCount }, () =>
      startApp('dist/apps/worker/src/main.js', workerEnv, { portVariable: 'WORKER_HEALTH_PORT', healthPath: '/readyz' }),
    ),
  );
  await warmUp(db, apiUrl, workerCount);
  const minutes = [];
  for (let minute = 1; minute <= MINUTES; minute += 1) {
    minutes.push({ workerCount, minute, ...(await measureMinute(db, api, workers, new Date(due.getTime() + (minute - 1) * 60_000))) });
  }
  await Promise.all(workers.map((worker) => worker.stop()));
  return minutes;
}

export async function benchSchedules() {
  const database = await startDatabase();
  const api = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: database.url, OS_SECURITY_KEY: ROOT_KEY });
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  try {
    await createSchedules(api.url);
    await addHistory(db);
    const results = [];
    for (const workerCount of WORKER_ROUNDS) {
      results.push(...(await round(db, database.url, api, workerCount)));
    }
    const once = (r) => r.distinct === r.fires && r.fires === SCHEDULES;
    const single = results.filter((r) => r.workerCount === 1);
    const minuteName = (r) => (r.minute === 1 ? 'first after start' : `+${r.minute - 1}`);
    const lines = [
      `## Schedules (\`node bench/run.mjs schedules\`)`,
      '',
      `Machine: ${machine()}; load average ${load()} (1/5/15 min) at the end of the run.`,
      '',
      `${SCHEDULES} schedules due at the same minute boundary, each with ${HISTORY} finished fires of history; each fire is GET /health on the api over loopback with the`,
      `schedule credential. Tick 1000 ms, ${process.env.BENCH_SCHEDULE_CONCURRENCY ?? '100 (the default)'} concurrent fires per worker. due → fired = slot time to the`,
      'worker starting the call; due → queued = slot time to the tick queueing the fire; fire = its start to its end;',
      'fires/s from the first call to the last completion; CPU per fire from /proc, from half a second before the',
      'boundary until every fire ended (each worker made a few warm-up calls first). Every schedule runs each minute:',
      '"first after start" is the workers\' first burst, "+1" the same burst a minute later.',
      '',
      '| workers | minute | fires | each schedule once | failed | due → queued p99 | due → fired p50 | p99 | max | fire p50 | fires/s | worker CPU/fire | api CPU/fire |',
      '|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...results.map(
        (r) =>
          `| ${r.workerCount} | ${minuteName(r)} | ${r.fires} | ${once(r) ? 'yes' : 'NO'} | ${r.failed} | ${Math.round(r.queuedP99)} ms | ${Math.round(r.p50)} ms | ${Math.round(r.p99)} ms | ${Math.round(r.max)} ms | ${Math.round(r.callP50)} ms | ${Math.round(r.perSecond)} | ${r.workerCpuPerFire.toFixed(2)} ms | ${r.apiCpuPerFire.toFixed(2)} ms |`,
      ),
      ...(single.length > 0
        ? [
            '',
            `Target (one worker: every schedule fired exactly once, due → fired p99 ≤ ${TARGET_P99_MS} ms): ${single
              .map((r) => `${minuteName(r)}: ${once(r) && r.p99 <= TARGET_P99_MS ? 'met' : 'NOT met'}`)
              .join('; ')}.`,
          ]
        : []),
    ];
    return lines.join('\n');
  } finally {
    await db.end();
    await api.stop();
    await database.stop();
  }
}

// The background POST against its floor: requests/s of `POST /agents/echo-agent/runs` with background=true
// on the built api and on bench/reference-server.mjs (the same statement, nothing else), with autocannon,
// 32 connections, a JSON body and the same svc_pat_ token, on the same database; rounds alternate.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

import { load, loadRound, machine, median, startApp, startDatabase } from './support.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 32;
const KEY = 'bench-os-security-key-000000';
// BENCH_BASELINE_CHECKOUT=<dir of another built checkout> adds its api as a row (a before/after run).
const BASELINE = process.env.BENCH_BASELINE_CHECKOUT;

async function startReference(url) {
  const child = spawn(process.execPath, ['bench/reference-server.mjs'], {
    env: { PATH: process.env.PATH, DATABASE_URL: url },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = await new Promise((resolve) => createInterface({ input: child.stdout }).once('line', (text) => resolve([text])));
  return { url: JSON.parse(line).url, child, stop: () => new Promise((done) => (child.once('exit', done), child.kill('SIGTERM'))) };
}

function post(server, token) {
  return loadRound(server, {
    url: `${server.url}/agents/echo-agent/runs`,
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'hello', background: true }),
    connections: CONNECTIONS,
    duration: SECONDS,
  });
}

export async function benchBackgroundPost() {
  const loadAtStart = load();
  const db = await startDatabase();
  const api = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY, DEMO_COMPONENTS: 'true' });
  const reference = await startReference(db.url);
  const baseline = BASELINE
    ? await startApp(`${BASELINE}/dist/apps/api/src/main.js`, { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY, DEMO_COMPONENTS: 'true' })
    : null;
  const servers = { api, reference, ...(baseline ? { baseline } : {}) };
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
      await post(server, token); // warm-up: JIT, pools, token caches
    }
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const name of names.map((_, i) => names[(i + round) % names.length])) {
        samples[name].push(await post(servers[name], token));
      }
    }
  } finally {
    await Promise.all(Object.values(servers).map((server) => server.stop()));
    await db.stop();
  }
  const rps = (name) => median(samples[name].map((sample) => sample.rps));
  const cpu = (name) => median(samples[name].map((sample) => sample.cpuMicros));
  return [
    `## Background POST against its floor (\`node bench/run.mjs background-post\`)`,
    '',
    `Machine: ${machine()}; load ${loadAtStart} at the start, ${load()} at the end. autocannon, ${CONNECTIONS} connections, ${SECONDS} s per case, JSON body, the same svc_pat_ token (agents:run), the same database; medians of ${ROUNDS} alternating rounds after a warm-up.`,
    '',
    '| server | POSTs/s | ratio | server CPU µs/request |',
    '|---|---:|---:|---:|',
    `| reference (Fastify + pg, one statement) | ${Math.round(rps('reference'))} | 1.00 | ${Math.round(cpu('reference'))} |`,
    `| the api | ${Math.round(rps('api'))} | ${(rps('api') / rps('reference')).toFixed(2)} | ${Math.round(cpu('api'))} |`,
    ...(baseline
      ? [
          `| the api of ${BASELINE} | ${Math.round(rps('baseline'))} | ${(rps('baseline') / rps('reference')).toFixed(2)} | ${Math.round(cpu('baseline'))} |`,
        ]
      : []),
  ].join('\n');
}

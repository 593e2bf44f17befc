// The api's other run paths, each on its own: a synchronous POST opening a session, one continuing a
// single long session (every connection posts into it), and GET of a run by id (what pollers call).
// autocannon, 32 connections, the same svc_pat_ token, one database; requests/s and the api's CPU per
// request. BENCH_BASELINE_CHECKOUT=<dir of another built checkout> adds its api (a before/after run).
import { load, loadRound, machine, median, startApp, startDatabase } from './support.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 32;
const KEY = 'bench-os-security-key-000000';
const BASELINE = process.env.BENCH_BASELINE_CHECKOUT;

const measure = (server, request) => loadRound(server, { ...request(server), connections: CONNECTIONS, duration: SECONDS });

export async function benchRunPaths() {
  const loadAtStart = load();
  const db = await startDatabase();
  const env = { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY, DEMO_COMPONENTS: 'true' };
  const servers = { api: await startApp('dist/apps/api/src/main.js', env) };
  if (BASELINE) {
    servers.baseline = await startApp(`${BASELINE}/dist/apps/api/src/main.js`, env);
  }
  const minted = await fetch(`${servers.api.url}/service-accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-run-paths', scopes: [{ scope: 'agents:run' }, { scope: 'agents:read' }] }),
  });
  const { token } = await minted.json();
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const accepted = await fetch(`${servers.api.url}/agents/echo-agent/runs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message: 'hello', background: true }),
  });
  const { run_id: runId } = await accepted.json();
  const post = (body) => (server) => ({ url: `${server.url}/agents/echo-agent/runs`, method: 'POST', headers, body: JSON.stringify(body) });
  const paths = {
    'sync POST, a new session each': post({ message: 'hello' }),
    'sync POST, one long session': post({ message: 'hello', session_id: `bench-long-session-${Date.now()}` }),
    'GET a run by id (background, with its job)': (server) => ({ url: `${server.url}/agents/echo-agent/runs/${runId}`, headers }),
  };
  const names = Object.keys(servers);
  const samples = {};
  try {
    for (const [path, request] of Object.entries(paths)) {
      for (const name of names) {
        await measure(servers[name], request); // warm-up
      }
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const name of names.map((_, i) => names[(i + round) % names.length])) {
          (samples[`${path}|${name}`] ??= []).push(await measure(servers[name], request));
        }
      }
    }
  } finally {
    await Promise.all(Object.values(servers).map((server) => server.stop()));
    await db.stop();
  }
  const row = (path, name, label) => {
    const runs = samples[`${path}|${name}`];
    return `| ${path} | ${label} | ${Math.round(median(runs.map((run) => run.rps)))} | ${Math.round(median(runs.map((run) => run.cpuMicros)))} |`;
  };
  return [
    `## The api's run paths (\`node bench/run.mjs run-paths\`)`,
    '',
    `Machine: ${machine()}; load ${loadAtStart} at the start, ${load()} at the end. autocannon, ${CONNECTIONS} connections, ${SECONDS} s per case, echo-agent, the same svc_pat_ token, one database; medians of ${ROUNDS} alternating rounds after a warm-up.`,
    '',
    '| path | api | requests/s | api CPU µs/request |',
    '|---|---|---:|---:|',
    ...Object.keys(paths).flatMap((path) => [
      ...(BASELINE ? [row(path, 'baseline', `${BASELINE}`)] : []),
      row(path, 'api', 'this checkout'),
    ]),
  ].join('\n');
}

// Token verification cost: requests/s for anonymous GET /health and for GET /config
// anonymous, with a cached svc_pat_ token, and with the cache off (TTL 0).
// Rounds alternate between the cases; each case's median of the rounds is reported.
import { loadRound, machine, median, startApp, startDatabase } from './support.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 32;

/**
 * Load one endpoint; returns requests/s and the server's CPU microseconds per request. The load
 * generator shares the two cores, so throughput is partly the client's; server CPU per request is
 * the steadier measure of what a request costs the api.
 */
function load(server, path, headers = {}) {
  return loadRound(server, { url: `${server.url}${path}`, headers, connections: CONNECTIONS, duration: SECONDS });
}

async function mintToken(api) {
  const response = await fetch(`${api.url}/service-accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `bench-${Date.now()}`, scopes: [{ scope: 'config:read' }] }),
  });
  return (await response.json()).token;
}

export async function benchAuth() {
  const db = await startDatabase();
  const key = 'bench-os-security-key-000000';
  // The anonymous and the token case run on the same process (auth mode none still verifies tokens and
  // enforces their scopes), so their ratio is the cost of verification alone. A keyed api mints the token.
  const keyed = { ...(await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: key })), key };
  const open = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url });
  const uncached = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '0' });
  const token = await mintToken(keyed);
  await keyed.stop();
  const auth = { authorization: `Bearer ${token}` };
  const cases = {
    'GET /health, anonymous': () => load(open, '/health'),
    'GET /config, anonymous': () => load(open, '/config'),
    'GET /config, svc_pat_ token, cache on (TTL 30 s)': () => load(open, '/config', auth),
    'GET /config, svc_pat_ token, cache off (TTL 0)': () => load(uncached, '/config', auth),
  };
  const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
  try {
    await load(open, '/config', auth); // warm-up: JIT, connection pool, cache
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [name, run] of Object.entries(cases)) {
        samples[name].push(await run());
      }
    }
  } finally {
    await Promise.all([uncached.stop(), open.stop()]);
    await db.stop();
  }
  const results = Object.fromEntries(
    Object.entries(samples).map(([name, values]) => [
      name,
      { rps: median(values.map((v) => v.rps)), cpuMicros: median(values.map((v) => v.cpuMicros)) },
    ]),
  );
  const health = results['GET /health, anonymous'].rps;
  const anonymousConfig = results['GET /config, anonymous'];
  const lines = [
    `### Token verification (${machine()})`,
    '',
    `autocannon, ${CONNECTIONS} connections, ${SECONDS} s per case, ${ROUNDS} alternating rounds, medians; api LOG_LEVEL=warn;`,
    'anonymous and cached-token cases on the same api process (auth mode none, which still verifies tokens).',
    '',
    '| case | requests/s | vs /health | vs anonymous /config | api CPU µs/request | CPU vs anonymous /config |',
    '|---|---:|---:|---:|---:|---:|',
    ...Object.entries(results).map(
      ([name, { rps, cpuMicros }]) =>
        `| ${name} | ${Math.round(rps)} | ${(rps / health).toFixed(2)} | ${(rps / anonymousConfig.rps).toFixed(2)} | ${cpuMicros.toFixed(1)} | ${(cpuMicros / anonymousConfig.cpuMicros).toFixed(2)} |`,
    ),
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await benchAuth());
}

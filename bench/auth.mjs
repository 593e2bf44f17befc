// Token verification cost: requests/s for anonymous GET /health and for GET /config
// anonymous, with a cached svc_pat_ token, and with the cache off (TTL 0).
// Rounds alternate between the cases; each case's median of the rounds is reported.
import autocannon from 'autocannon';

import { machine, median, startApp, startDatabase } from './support.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 32;

function load(url, headers = {}) {
  return new Promise((resolve, reject) => {
    autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS }, (error, result) => {
      if (error) {
        reject(error);
      } else if (result.non2xx > 0 || result.errors > 0) {
        reject(new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`));
      } else {
        resolve(result.requests.average);
      }
    });
  });
}

async function mintToken(api) {
  // An open instance (auth mode none) cannot mint; a second api with a key mints into the same database.
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
  // One api per cache setting, same database; anonymous callers still pass on a keyed instance's /health only,
  // so the anonymous /config case runs on an open instance.
  const cached = { ...(await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: key })), key };
  const uncached = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: key, SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '0' });
  const open = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url });
  const token = await mintToken(cached);
  const auth = { authorization: `Bearer ${token}` };
  const cases = {
    'GET /health, anonymous': () => load(`${cached.url}/health`),
    'GET /config, anonymous (auth mode none)': () => load(`${open.url}/config`),
    'GET /config, svc_pat_ token, cache on (TTL 30 s)': () => load(`${cached.url}/config`, auth),
    'GET /config, svc_pat_ token, cache off (TTL 0)': () => load(`${uncached.url}/config`, auth),
  };
  const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
  try {
    await load(`${cached.url}/config`, auth); // warm-up: JIT, connection pool, cache
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [name, run] of Object.entries(cases)) {
        samples[name].push(await run());
      }
    }
  } finally {
    await Promise.all([cached.stop(), uncached.stop(), open.stop()]);
    await db.stop();
  }
  const results = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]));
  const health = results['GET /health, anonymous'];
  const anonymousConfig = results['GET /config, anonymous (auth mode none)'];
  const lines = [
    `### Token verification (${machine()})`,
    '',
    `autocannon, ${CONNECTIONS} connections, ${SECONDS} s per case, ${ROUNDS} alternating rounds, medians; api LOG_LEVEL=warn.`,
    '',
    '| case | requests/s | vs /health | vs anonymous /config |',
    '|---|---:|---:|---:|',
    ...Object.entries(results).map(
      ([name, rps]) => `| ${name} | ${Math.round(rps)} | ${(rps / health).toFixed(2)} | ${(rps / anonymousConfig).toFixed(2)} |`,
    ),
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await benchAuth());
}

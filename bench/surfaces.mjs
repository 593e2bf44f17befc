// A2A and WebSocket against REST for the same echo-agent run, on the built api over loopback:
// - round trip of a finished run: REST POST .../runs vs A2A SendMessage (JSON-RPC and HTTP+JSON);
// - first-event latency of a streamed run: REST stream=true (RunStarted over SSE) vs a `run` frame on an
//   open /ws socket (its RunStarted frame).
// Rounds are interleaved (one of each per round) so load on the shared machine hits every surface alike.
import { randomUUID } from 'node:crypto';

import WebSocket from 'ws';

import { load, machine, startApp, startDatabase } from './support.mjs';

const ROUNDS = Number(process.env.BENCH_SURFACES_ROUNDS ?? 300);
const WARMUP = 30;
const KEY = 'bench-os-security-key-000000';
const AUTH = { authorization: `Bearer ${KEY}` };

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function timed(action) {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

async function expectOk(response) {
  if (!response.ok) {
    throw new Error(`${response.url} answered ${response.status}: ${await response.text()}`);
  }
  return response.text();
}

const message = (text) => ({ messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] });

function surfaces(url, socket) {
  const json = { ...AUTH, 'content-type': 'application/json', 'a2a-version': '1.0' };
  const post = (path, body) => fetch(`${url}${path}`, { method: 'POST', headers: json, body: JSON.stringify(body) });
  return {
    'REST POST /agents/echo-agent/runs': () => post('/agents/echo-agent/runs', { message: 'bench' }).then(expectOk),
    'A2A JSON-RPC SendMessage': async () => {
      const body = JSON.parse(
        await post('/a2a/agents/echo-agent', { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message('bench') } }).then(
          expectOk,
        ),
      );
      if (!body.result) {
        throw new Error(JSON.stringify(body));
      }
    },
    'A2A HTTP+JSON message:send': () => post('/a2a/agents/echo-agent/message:send', { message: message('bench') }).then(expectOk),
    'REST stream=true, first event': async () => {
      const response = await post('/agents/echo-agent/runs', { message: 'bench', stream: true });
      const reader = response.body.getReader();
      await reader.read(); // the first chunk carries RunStarted
      reader.releaseLock();
      await response.body.cancel().catch(() => undefined);
    },
    '/ws run, first event': () =>
      new Promise((resolve, reject) => {
        const onFrame = (data) => {
          const frame = JSON.parse(data.toString());
          if (frame.event === 'RunStarted' || frame.event === 'error') {
            socket.off('message', onFrame);
            if (frame.event === 'error') {
              reject(new Error(frame.detail));
            } else {
              resolve();
            }
          }
        };
        socket.on('message', onFrame);
        socket.send(JSON.stringify({ action: 'run', component_type: 'agent', component_id: 'echo-agent', message: 'bench' }));
      }),
  };
}

export async function benchSurfaces() {
  const db = await startDatabase();
  const api = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY, DEMO_COMPONENTS: 'true' }).catch(
    async (error) => {
      await db.stop();
      throw error;
    },
  );
  const socket = new WebSocket(`${api.url.replace('http', 'ws')}/ws`, { headers: AUTH });
  await new Promise((resolve, reject) => (socket.once('open', resolve), socket.once('error', reject)));
  const runs = surfaces(api.url, socket);
  const samples = Object.fromEntries(Object.keys(runs).map((name) => [name, []]));
  const startedLoad = load();
  try {
    for (let round = 0; round < WARMUP + ROUNDS; round += 1) {
      for (const [name, run] of Object.entries(runs)) {
        const ms = await timed(run);
        if (round >= WARMUP) {
          samples[name].push(ms);
        }
      }
    }
  } finally {
    socket.close();
    await api.stop();
    await db.stop();
  }
  const row = (name, baseline) => {
    const [p50, p99] = [percentile(samples[name], 50), percentile(samples[name], 99)];
    const [b50, b99] = [percentile(samples[baseline], 50), percentile(samples[baseline], 99)];
    return `| ${name} | ${p50.toFixed(2)} | ${p99.toFixed(2)} | ${(p50 / b50).toFixed(2)} | ${(p99 / b99).toFixed(2)} |`;
  };
  const roundTrip = 'REST POST /agents/echo-agent/runs';
  const firstEvent = 'REST stream=true, first event';
  return [
    `### Surfaces: A2A and WebSocket against REST (\`node bench/run.mjs surfaces\`)`,
    '',
    `${machine()}; load ${startedLoad} before, ${load()} after; ${ROUNDS} interleaved rounds after ${WARMUP} of warm-up; echo-agent, OS security key.`,
    '',
    '| surface | p50 ms | p99 ms | p50 / REST | p99 / REST |',
    '|---|---:|---:|---:|---:|',
    row(roundTrip, roundTrip),
    row('A2A JSON-RPC SendMessage', roundTrip),
    row('A2A HTTP+JSON message:send', roundTrip),
    row(firstEvent, firstEvent),
    row('/ws run, first event', firstEvent),
  ].join('\n');
}

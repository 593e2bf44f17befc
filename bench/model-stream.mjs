// Streaming overhead of a modelAgent run: from the moment an OpenAI-compatible server writes a chunk
// to the moment the client of a `stream=true` run receives it as a RunContent event. The server and the
// client live in this process (one clock); the api in between is the built app, on loopback.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { load, machine, startApp, startDatabase } from './support.mjs';

const RUNS = Number(process.env.BENCH_STREAM_RUNS ?? 10);
const CHUNKS = Number(process.env.BENCH_STREAM_CHUNKS ?? 100);
const CHUNK_GAP_MS = 5;
const KEY = 'bench-os-security-key-000000';

/** A stand-in provider: CHUNKS chunks per completion, CHUNK_GAP_MS apart, each send time recorded by its text. */
function provider(sentAt) {
  const server = createServer(async (request, response) => {
    for await (const _ of request) {
      // drain the body
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const base = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'bench' };
    for (let index = 0; index < CHUNKS; index += 1) {
      await new Promise((resolve) => setTimeout(resolve, CHUNK_GAP_MS));
      const text = `<${sentAt.length}>`;
      sentAt.push(performance.now());
      response.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: text }, finish_reason: null }] })}\n\n`);
    }
    response.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
    response.write(
      `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 1, completion_tokens: CHUNKS, total_tokens: CHUNKS + 1 } })}\n\n`,
    );
    response.end('data: [DONE]\n\n');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Reads an SSE response, calling onData(json, arrivedAt) for each `data:` line. */
async function readEvents(response, onData) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of response.body) {
    const at = performance.now();
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const data = /^data: (.*)$/m.exec(buffer.slice(0, end))?.[1];
      buffer = buffer.slice(end + 2);
      if (data && data !== '[DONE]') {
        onData(JSON.parse(data), at);
      }
    }
  }
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export async function benchModelStream() {
  const sentAt = [];
  const server = await provider(sentAt);
  const baseURL = `http://127.0.0.1:${server.address().port}/v1`;
  const file = join(mkdtempSync(join(tmpdir(), 'bench-model-')), 'agents.mjs');
  writeFileSync(
    file,
    `export default ({ modelAgent }) => [modelAgent({ id: 'bench-model', instructions: 'x', model: 'bench', baseURL: '${baseURL}' })];`,
  );
  const db = await startDatabase();
  const api = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: KEY, COMPONENTS_MODULE: file });
  const lag = (arrivals) => arrivals.map(([index, at]) => at - sentAt[index]);
  const direct = [];
  const platform = [];
  try {
    for (let run = 0; run < RUNS + 1; run += 1) {
      // The floor: the same chunks read straight from the provider by this client.
      const straight = await fetch(`${baseURL}/chat/completions`, { method: 'POST', body: '{}' });
      const straightArrivals = [];
      await readEvents(straight, (json, at) => {
        const text = json.choices?.[0]?.delta?.content;
        if (text) straightArrivals.push([Number(text.slice(1, -1)), at]);
      });
      const streamed = await fetch(`${api.url}/agents/bench-model/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'go', stream: true }),
      });
      const arrivals = [];
      await readEvents(streamed, (json, at) => {
        if (typeof json.content === 'string' && json.status === undefined) arrivals.push([Number(json.content.slice(1, -1)), at]);
      });
      if (arrivals.length !== CHUNKS) {
        throw new Error(`expected ${CHUNKS} RunContent events, got ${arrivals.length}`);
      }
      if (run > 0) {
        // run 0 warms up the JIT and the connection pool
        direct.push(...lag(straightArrivals));
        platform.push(...lag(arrivals));
      }
    }
  } finally {
    await api.stop();
    await db.stop();
    server.close();
  }
  const row = (name, values) =>
    `| ${name} | ${values.length} | ${percentile(values, 50).toFixed(2)} ms | ${percentile(values, 99).toFixed(2)} ms |`;
  return [
    `### modelAgent streaming overhead (${machine()}, load ${load()})`,
    '',
    `${RUNS} streamed runs × ${CHUNKS} chunks, ${CHUNK_GAP_MS} ms apart; time from the provider writing a chunk to the client receiving it.`,
    '',
    '| path | chunks | p50 | p99 |',
    '|---|---:|---:|---:|',
    row('provider → client directly (floor)', direct),
    row('provider → api (modelAgent) → client RunContent', platform),
  ].join('\n');
}

// One worker process of the queue bench: `node bench/queue-worker.mjs <system> <concurrency>`.
// Prints JSON lines: {ready} once processing, {first} at the first job's start, {latency} for jobs that carry `t`.
import { systems } from './queue-systems.mjs';

const [systemName, concurrency] = process.argv.slice(2);
const system = systems[systemName];
let first = false;
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

const stop = await system.work(process.env.DATABASE_URL, Number(concurrency), (payload) => {
  const now = Date.now();
  if (!first) {
    first = true;
    print({ first: now });
  }
  if (payload?.t) {
    print({ latency: now - payload.t });
  }
});
print({ ready: true });
process.once('SIGTERM', async () => {
  await stop();
  process.exit(0);
});

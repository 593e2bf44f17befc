// `npm run bench`: every benchmark, one after another, printing markdown to paste into bench/RESULTS.md.
import { benchAuth } from './auth.mjs';
import { benchBackgroundPost } from './background-post.mjs';
import { benchBulkRequeue } from './bulk-requeue.mjs';
import { benchCliVersion } from './cli-version.mjs';
import { benchModelStream } from './model-stream.mjs';
import { benchQueue } from './queue.mjs';
import { benchQueueReads } from './queue-reads.mjs';
import { benchRunPaths } from './run-paths.mjs';
import { benchSchedules } from './schedules.mjs';
import { benchSurfaces } from './surfaces.mjs';
import { benchTracing } from './tracing.mjs';

const only = process.argv[2];
const benches = {
  auth: benchAuth,
  queue: benchQueue,
  'background-post': benchBackgroundPost,
  'run-paths': benchRunPaths,
  'queue-reads': benchQueueReads,
  schedules: benchSchedules,
  'cli-version': benchCliVersion,
  'model-stream': benchModelStream,
  'bulk-requeue': benchBulkRequeue,
  surfaces: benchSurfaces,
  tracing: benchTracing,
};

for (const [name, run] of Object.entries(benches)) {
  if (!only || only === name) {
    console.log(`${await run()}\n`);
  }
}

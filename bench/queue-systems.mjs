// The queues the queue bench compares, each behind the same small interface, each tuned for throughput the way
// its documentation recommends. The driver (queue.mjs) and the worker processes (queue-worker.mjs) share this file.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';

import pg from 'pg';
import pino from 'pino';

export const NOOP = 'bench-noop';

/**
 * @typedef {object} BenchSystem
 * @property {string} name
 * @property {(url: string) => Promise<void>} install        schema, once per database
 * @property {(url: string) => Promise<void>} reset          delete every job between cases
 * @property {(url: string, payloads: object[]) => Promise<void>} enqueueMany   one bulk insert
 * @property {(url: string) => Promise<{send: (payload: object) => Promise<void>, close: () => Promise<void>}>} sender
 *           a producer for single jobs
 * @property {(db: pg.Client) => Promise<boolean>} pending   whether any job is not completed yet (one cheap EXISTS,
 *           so that watching for the end costs the database as little as possible)
 * @property {number} pendingEveryMs   how often the bench asks: a probe that reads an index can be asked often, so the
 *           end of a half-second drain is seen within a few ms; one that scans the table cannot without slowing the drain
 * @property {(url: string, concurrency: number, onJob: (payload: object) => void) => Promise<() => Promise<void>>} work
 *           starts processing in this process; resolves to a stop function
 */

async function withClient(url, use) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** graphile-worker 0.17: local queue (batched fetch) and batched completion, per its performance docs. */
const graphile = {
  name: 'graphile-worker',
  preset: (url, concurrency) => ({
    worker: {
      connectionString: url,
      concurrentJobs: concurrency,
      maxPoolSize: concurrency + 2,
      pollInterval: 2000,
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
      fileExtensions: [],
    },
  }),
  async install(url) {
    const { runMigrations } = await import('graphile-worker');
    await runMigrations({ connectionString: url, logger: silentGraphileLogger(await import('graphile-worker')) });
  },
  async reset(url) {
    await withClient(url, (db) => db.query('DELETE FROM graphile_worker._private_jobs'));
  },
  async enqueueMany(url, payloads) {
    const { makeWorkerUtils } = await import('graphile-worker');
    const utils = await makeWorkerUtils({ connectionString: url });
    try {
      await utils.addJobs(payloads.map((payload) => ({ identifier: NOOP, payload })));
    } finally {
      await utils.release();
    }
  },
  async sender(url) {
    const { makeWorkerUtils } = await import('graphile-worker');
    const utils = await makeWorkerUtils({ connectionString: url });
    return { send: (payload) => utils.addJob(NOOP, payload), close: () => utils.release() };
  },
  pendingEveryMs: 5,
  async pending(db) {
    // graphile-worker deletes a job when it completes.
    const { rows } = await db.query('SELECT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS pending');
    return rows[0].pending;
  },
  async work(url, concurrency, onJob) {
    const worker = await import('graphile-worker');
    const runner = await worker.run({
      preset: graphile.preset(url, concurrency),
      taskList: { [NOOP]: async (payload) => onJob(payload) },
      logger: silentGraphileLogger(worker),
      noHandleSignals: true,
    });
    return () => runner.stop();
  },
};

function silentGraphileLogger({ Logger }) {
  return new Logger(() => (level, message) => {
    if (level === 'error') console.error(message);
  });
}

/** pg-boss 12: LISTEN/NOTIFY on the queue, batched fetch, continuous fetching while batches come back full. */
const pgBoss = {
  name: 'pg-boss',
  async boss(url, options = {}) {
    const { PgBoss } = await import('pg-boss');
    const boss = new PgBoss({ connectionString: url, useListenNotify: true, supervise: false, schedule: false, ...options });
    boss.on('error', (error) => console.error(error));
    await boss.start();
    return boss;
  },
  async install(url) {
    const boss = await pgBoss.boss(url);
    await boss.createQueue(NOOP, { notify: true });
    await boss.stop({ graceful: false });
  },
  async reset(url) {
    await withClient(url, (db) => db.query('DELETE FROM pgboss.job'));
  },
  async enqueueMany(url, payloads) {
    const boss = await pgBoss.boss(url);
    try {
      for (let i = 0; i < payloads.length; i += 5000) {
        await boss.insert(
          NOOP,
          payloads.slice(i, i + 5000).map((data) => ({ data })),
        );
      }
    } finally {
      await boss.stop({ graceful: false });
    }
  },
  async sender(url) {
    const boss = await pgBoss.boss(url);
    return { send: (payload) => boss.send(NOOP, payload), close: () => boss.stop({ graceful: false }) };
  },
  // No index of pg-boss's holds its active jobs, so its probe scans the table.
  pendingEveryMs: 50,
  async pending(db) {
    const { rows } = await db.query(`SELECT EXISTS (SELECT 1 FROM pgboss.job WHERE state <> 'completed') AS pending`);
    return rows[0].pending;
  },
  async work(url, concurrency, onJob) {
    const boss = await pgBoss.boss(url);
    // Two fetch loops of half the concurrency each, so one fetches while the other's batch runs.
    const loops = Math.min(2, concurrency);
    await boss.work(
      NOOP,
      { localConcurrency: loops, batchSize: Math.ceil(concurrency / loops), burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
      async (jobs) => {
        await Promise.all(jobs.map(async (job) => onJob(job.data)));
      },
    );
    return () => boss.stop({ graceful: true, wait: true });
  },
};

// Our queue, from the built dist/ code (`npm run bench` builds first): the same QueueWorker the worker app runs.
const require = createRequire(import.meta.url);
const { QueueWorker } = require('../dist/libs/queue/src/worker/queue-worker.js');
const { JobStore } = require('../dist/libs/queue/src/worker/job-store.js');
const { enginePool } = require('../dist/libs/queue/src/worker/queue-engine-host.js');
const { enqueueJobs } = require('../dist/libs/queue/src/enqueue.js');

/** A no-op job in our schema: every required column set, nothing else. */
const ourJob = (payload) => ({ jobType: NOOP, componentType: 'agent', componentId: NOOP, sessionId: NOOP, userId: null, payload });

/** Our queue with `prefetch` jobs claimed ahead of a free slot (WORKER_PREFETCH in the worker app). */
const platformQueue = (name, prefetch) => ({
  name,
  async install() {
    // startDatabase() already applied our migrations.
  },
  async reset(url) {
    await withClient(url, (db) => db.query('DELETE FROM queue_jobs'));
  },
  async enqueueMany(url, payloads) {
    await withClient(url, async (db) => {
      for (let i = 0; i < payloads.length; i += 5000) {
        await enqueueJobs(db, payloads.slice(i, i + 5000).map(ourJob));
      }
    });
  },
  async sender(url) {
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    return { send: (payload) => enqueueJobs(db, [ourJob(payload)]), close: () => db.end() };
  },
  pendingEveryMs: 5,
  async pending(db) {
    // Each half reads a partial index (queued jobs; locked ones, which every running job is): a single
    // `status IN (...)` has no index and scans every finished job, a cost graphile-worker's probe never pays.
    const { rows } = await db.query(
      `SELECT EXISTS (SELECT 1 FROM queue_jobs WHERE status = 'queued') OR EXISTS (SELECT 1 FROM queue_jobs WHERE locked_by IS NOT NULL) AS pending`,
    );
    return rows[0].pending;
  },
  async work(url, concurrency, onJob) {
    const pool = enginePool(url, concurrency + 2, JobStore.setUpConnection);
    const worker = new QueueWorker({
      pool,
      connectListener: async () => {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        return client;
      },
      store: new JobStore(pool, `bench:${process.pid}:${randomUUID().slice(0, 6)}`, 86400),
      handlers: new Map([[NOOP, { handle: async (job) => (onJob(job.payload), { outcome: 'completed' }) }]]),
      concurrency,
      prefetch: { jobs: prefetch, horizonMs: defaults.WORKER_PREFETCH_HORIZON_MS },
      pollIntervalMs: 1000,
      lockGraceSeconds: 60,
      retentionSeconds: 0,
      logger: pino({ level: 'warn' }),
    });
    await worker.start();
    return async () => {
      await worker.stop(5000);
      await pool.end();
    };
  },
});

const { Env } = require('../dist/libs/config/src/env.js');
const defaults = new Env();
const defaultPrefetch = defaults.WORKER_PREFETCH;

// BENCH_QUEUE_PREFETCH=0,100,500 adds our queue at those prefetch sizes (a tuning run).
const tuning = (process.env.BENCH_QUEUE_PREFETCH ?? '')
  .split(',')
  .filter(Boolean)
  .map((size) => [`prefetch${size}`, platformQueue(`platform queue (prefetch ${size})`, Number(size))]);

export const systems = {
  graphile,
  pgBoss,
  // The worker app's configuration as shipped: what an operator gets without tuning.
  ours: platformQueue(`platform queue (default: prefetch ${defaultPrefetch})`, defaultPrefetch),
  ...Object.fromEntries(tuning),
};

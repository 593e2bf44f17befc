import { once } from 'node:events';

import { Client, Pool } from 'pg';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { createTestDatabase, query } from '../../../../test/support/database';
import { enqueueJobs } from '../enqueue';
import { JobContext, JobHandler } from './job-handler';
import { QueueWorker } from './queue-worker';

const JOB_TYPE = 'contract-test';

// The handler contract, in process against a real database: what a handler sees through
// JobContext when its worker stops past the deadline.
describe('QueueWorker handler contract', () => {
  let url: string;
  let pool: Pool;

  beforeEach(async () => {
    url = await createTestDatabase();
    pool = new Pool({ connectionString: url, max: 4 });
  });

  afterEach(async () => {
    await pool.end();
  });

  function startWorker(handler: JobHandler): QueueWorker {
    return new QueueWorker({
      pool,
      connectListener: async () => {
        const client = new Client({ connectionString: url });
        await client.connect();
        return client;
      },
      workerId: 'contract-test-worker',
      handlers: new Map([[JOB_TYPE, handler]]),
      concurrency: 2,
      prefetch: 0,
      pollIntervalMs: 100,
      lockGraceSeconds: 30,
      cancelIntentTtlSeconds: 3600,
      retentionSeconds: 0,
      logger: pino({ level: 'silent' }),
    });
  }

  const job = (id: string) => ({
    id,
    jobType: JOB_TYPE,
    componentType: 'agent',
    componentId: 'x',
    sessionId: 's',
    userId: null,
    payload: {},
  });

  it('a stop past the deadline aborts the signal of a handler that holds it, fails its next checkpoint, and gives the job back', async () => {
    const seen: { reason?: unknown; checkpoint?: string } = {};
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const worker = startWorker({
      async handle(_job, context: JobContext) {
        started();
        await once(context.signal, 'abort');
        seen.reason = context.signal.reason;
        await context.checkpoint().catch((error: Error) => (seen.checkpoint = error.message));
        return { outcome: 'completed' };
      },
    });
    await worker.start();
    const [id] = await enqueueJobs(pool, [job('0a8c2f57-5d0e-4a53-a2b4-5a0f1f0c6b11')]);
    await running;

    await worker.stop(200);

    expect(seen).toEqual({ reason: 'Worker is shutting down', checkpoint: 'Worker is shutting down' });
    const [row] = await query<{ status: string; attempt: number; max_attempts: number; error: string }>(
      url,
      'SELECT status, attempt, max_attempts, error FROM queue_jobs WHERE id = $1',
      [id],
    );
    // Released with the attempt given back; the handler's late "completed" is fenced out.
    expect(row).toMatchObject({ status: 'queued', attempt: 1, max_attempts: 2 });
    expect(row.error).toContain('Released by worker contract-test-worker at shutdown');
  });

  it('a signal first read after the stop is already aborted', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let late: AbortSignal | undefined;
    const worker = startWorker({
      async handle(_job, context: JobContext) {
        started();
        await held;
        late = context.signal;
        return { outcome: 'completed' };
      },
    });
    await worker.start();
    await enqueueJobs(pool, [job('6f1d0b8e-0c55-4a5e-9a3e-2b9d4c7e8f21')]);
    await running;

    const stopping = worker.stop(100);
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await stopping;

    expect(late?.aborted).toBe(true);
    expect(late?.reason).toBe('Worker is shutting down');
  });
});

import type { ClientBase, Pool } from 'pg';

import { foldCountDeltas, inTransaction } from '@app/database';

import { intentIsLive } from '../cancellation-intents';
import { JobPayload } from '../job.entity';
import { JOB_STATUSES } from '../job-status';
import { JOBS_READY_CHANNEL } from '../notify';
import { ClaimedJob } from './job-handler';
import { ExpiredRow, FinishedAttempt, HeldJob, RecordedState, StartedAttempt, SweptWork, WorkStore } from './work-store';

interface ClaimRow {
  id: string;
  job_type: string;
  component_type: string;
  component_id: string;
  session_id: string;
  user_id: string | null;
  payload: JobPayload;
  attempt: number;
  max_attempts: number;
  started: boolean;
  cancel_requested: boolean;
}

/** Retry backoff after failed attempt N: 2^(N-1) s, capped at 60 s. */
const backoff = (attempt: string) => `make_interval(secs => least(60, power(2, greatest(${attempt}, 1) - 1)))`;
/**
 * A deferred job waits 2.5 to 7.5 s before any worker may claim it again: time for one that can run it to take
 * it. The spread matters: the deferring worker's next polls fall at a fixed offset from its deferral, so with a
 * fixed wait it would find the job available first, every time.
 */
const DEFER = `make_interval(secs => 2.5 + 5 * random())`;

/** SQL: a live cancellation intent exists for job j; `ttl` is the parameter holding the intents' lifetime. */
const cancelRequested = (ttl: string) =>
  `EXISTS (SELECT 1 FROM queue_cancellation_intents c WHERE c.run_id = j.id AND ${intentIsLive('c', ttl)}) AS cancel_requested`;

/**
 * Oldest claimable first; SKIP LOCKED lets any number of workers claim side by side, and
 * `attempt < max_attempts` makes re-execution beyond the budget impossible whatever the state.
 * The first $5 jobs start at once (`running`, attempt spent); the rest are reserved for this
 * worker's prefetch buffer: still `queued`, locked and heartbeated by it, no attempt spent.
 * The rows locked by `next` are updated through their tuple ids (a direct heap fetch, no
 * primary-key lookup): a locked row cannot move before the UPDATE in the same statement, and a
 * row that changed between the snapshot and the lock is simply not claimed this time.
 */
const CLAIM = `
  WITH next AS (
    SELECT ctid, available_at, created_at FROM queue_jobs
    WHERE status = 'queued' AND locked_by IS NULL AND available_at <= now() AND attempt < max_attempts AND job_type = ANY($3::varchar[])
    ORDER BY available_at, created_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  ), starting AS (
    SELECT ctid FROM next ORDER BY available_at, created_at LIMIT $5
  )
  UPDATE queue_jobs j
  SET status = CASE WHEN j.ctid = ANY (ARRAY (SELECT ctid FROM starting)) THEN 'running' ELSE 'queued' END,
      attempt = j.attempt + CASE WHEN j.ctid = ANY (ARRAY (SELECT ctid FROM starting)) THEN 1 ELSE 0 END,
      locked_by = $1, locked_at = now(), heartbeat_at = now(), updated_at = now()
  WHERE j.ctid = ANY (ARRAY (SELECT ctid FROM next))
  RETURNING j.id, j.job_type, j.component_type, j.component_id, j.session_id, j.user_id, j.payload, j.attempt, j.max_attempts,
    j.status = 'running' AS started, ${cancelRequested('$4')}`;

/**
 * Starts reserved jobs: each statement carries every job the worker began from its buffer since the last one
 * and that was still running when it went out (one done by then is started by FINISH).
 * Fenced: a job cancelled, or swept back to the queue, since it was reserved is not started.
 * Idempotent: a job this statement already started (its answer lost with the connection) answers again.
 */
const START = `
  UPDATE queue_jobs j
  SET status = 'running', attempt = h.attempt + 1, locked_at = now(), heartbeat_at = now(), updated_at = now()
  FROM unnest($2::uuid[], $3::int[]) AS h(id, attempt)
  WHERE j.id = ANY ($2::uuid[]) AND j.id = h.id AND j.locked_by = $1
    AND ((j.status = 'queued' AND j.attempt = h.attempt AND j.attempt < j.max_attempts) OR (j.status = 'running' AND j.attempt = h.attempt + 1))
  RETURNING j.id, j.attempt, ${cancelRequested('$4')}`;

/**
 * Records outcomes, fenced: a row whose attempt or lock changed (swept, requeued, released)
 * is left alone and missing from the result. A failure with attempts left goes back to
 * `queued` after the backoff. A deferred job goes back too, its attempt given back (it never
 * started), and is not an attempt the counters count. The outcome counters move in the same statement.
 * An attempt whose start was not written yet (`reserved`: the row is still reserved for this worker,
 * one attempt behind) is started and finished by this one write.
 */
const FINISH = `
  WITH input AS (
    SELECT * FROM unnest($2::uuid[], $3::int[], $4::varchar[], $5::text[], $6::bool[]) AS t(id, attempt, outcome, error, reserved)
  ), done AS (
    UPDATE queue_jobs j SET
      status = CASE WHEN i.outcome = 'deferred' OR (i.outcome = 'failed' AND i.attempt < j.max_attempts) THEN 'queued' ELSE i.outcome END,
      attempt = CASE WHEN i.outcome = 'deferred' THEN i.attempt - 1 ELSE i.attempt END,
      available_at = CASE
        WHEN i.outcome = 'deferred' THEN now() + ${DEFER}
        WHEN i.outcome = 'failed' AND i.attempt < j.max_attempts THEN now() + ${backoff('i.attempt')}
        ELSE j.available_at END,
      completed_at = CASE WHEN i.outcome IN ('paused', 'deferred') OR (i.outcome = 'failed' AND i.attempt < j.max_attempts) THEN NULL ELSE now() END,
      error = i.error, locked_by = NULL, locked_at = NULL, heartbeat_at = NULL, updated_at = now()
    FROM input i
    WHERE j.id = ANY ($2::uuid[]) AND j.id = i.id AND j.locked_by = $1
      AND ((NOT i.reserved AND j.status = 'running' AND j.attempt = i.attempt)
        OR (i.reserved AND j.status = 'queued' AND j.attempt = i.attempt - 1 AND j.attempt < j.max_attempts))
    RETURNING j.id, j.status, i.outcome
  ), counted AS (
    INSERT INTO queue_job_outcome_counters (outcome, total)
    SELECT CASE WHEN status = 'queued' THEN 'retried' ELSE status END, count(*) FROM done WHERE outcome <> 'deferred' GROUP BY 1 ORDER BY 1
    ON CONFLICT (outcome) DO UPDATE SET total = queue_job_outcome_counters.total + EXCLUDED.total
  )
  SELECT id, status FROM done`;

/** Renews the lock of running and reserved jobs alike; a job that moved meanwhile is absent from the result. */
const HEARTBEAT = `
  UPDATE queue_jobs j SET heartbeat_at = now()
  FROM unnest($2::uuid[], $3::int[]) AS h(id, attempt)
  WHERE j.id = ANY ($2::uuid[]) AND j.id = h.id AND j.attempt = h.attempt AND j.locked_by = $1 AND j.status IN ('running', 'queued')
  RETURNING j.id`;

/** Locked jobs whose heartbeat is older than the grace ($1), but those this worker ($2) holds ($3). */
const STALE = `
  SELECT id FROM queue_jobs WHERE locked_by IS NOT NULL AND heartbeat_at < now() - make_interval(secs => $1)
    AND NOT (locked_by = $2 AND id = ANY ($3::uuid[]))`;

/**
 * The suspects ($4) still stale: their worker is gone (or frozen). A running job spent an attempt: it is
 * retried or failed. A reserved one never started: it goes back to the queue as it was, its attempt untouched.
 */
const SWEEP = `
  WITH stale AS (
    ${STALE} AND id = ANY ($4::uuid[])
    FOR UPDATE SKIP LOCKED
  ), swept AS (
    UPDATE queue_jobs j SET
      status = CASE WHEN j.attempt < j.max_attempts THEN 'queued' ELSE 'failed' END,
      available_at = CASE WHEN j.attempt < j.max_attempts THEN now() + ${backoff('j.attempt')} ELSE j.available_at END,
      completed_at = CASE WHEN j.attempt < j.max_attempts THEN NULL ELSE now() END,
      error = format('Worker %s lost the job: no heartbeat for over %s s during attempt %s of %s', j.locked_by, $1, j.attempt, j.max_attempts)
        || CASE WHEN j.attempt < j.max_attempts THEN '; retrying'
           ELSE '; attempt budget exhausted, so it was not re-executed. Requeue it (POST /queue/jobs/{job_id}/requeue) to grant one more attempt' END,
      locked_by = NULL, locked_at = NULL, heartbeat_at = NULL, updated_at = now()
    FROM stale WHERE j.id = stale.id AND j.status = 'running'
    RETURNING j.id, j.status, j.error
  ), unreserved AS (
    UPDATE queue_jobs j SET locked_by = NULL, locked_at = NULL, heartbeat_at = NULL, updated_at = now()
    FROM stale WHERE j.id = stale.id AND j.status = 'queued'
    RETURNING j.id, j.status, j.error
  ), counted AS (
    INSERT INTO queue_job_outcome_counters (outcome, total) SELECT 'lost', count(*) FROM swept HAVING count(*) > 0
    ON CONFLICT (outcome) DO UPDATE SET total = queue_job_outcome_counters.total + EXCLUDED.total
  )
  SELECT id, status, error, true AS started FROM swept
  UNION ALL
  SELECT id, status, error, false AS started FROM unreserved`;

/**
 * Gives jobs back, nothing lost (at shutdown, jobs held ahead beyond the worker's pace, starts that failed):
 * a started one with its attempt refunded (max_attempts raised), a reserved one as it was.
 */
const RELEASE = `
  WITH released AS (
    UPDATE queue_jobs j SET status = 'queued', locked_by = NULL, locked_at = NULL, heartbeat_at = NULL, updated_at = now(),
      -- A job only held ahead keeps its place in the queue; a started one waits behind the others.
      available_at = CASE WHEN j.status = 'running' THEN now() ELSE j.available_at END,
      max_attempts = CASE WHEN j.status = 'running' THEN j.max_attempts + 1 ELSE j.max_attempts END,
      error = CASE WHEN j.status = 'running'
        THEN format('Released by worker %s at shutdown during attempt %s before it finished; the attempt was given back', $1, j.attempt)
        ELSE j.error END
    FROM unnest($2::uuid[], $3::int[]) AS r(id, attempt)
    WHERE j.id = ANY ($2::uuid[]) AND j.id = r.id AND j.attempt = r.attempt AND j.locked_by = $1 AND j.status IN ('running', 'queued')
    RETURNING j.id
  )
  SELECT id, pg_notify('${JOBS_READY_CHANNEL}', '') IS NULL AS notified FROM released`;

/**
 * One batch of terminal jobs past retention, with the state each ended in. A job ends after it was
 * created, so the created_at bound adds no condition but lets the index on it find the old jobs:
 * without it, each pass read the whole retention window.
 */
const DELETE_EXPIRED = `
  DELETE FROM queue_jobs WHERE id IN (
    SELECT id FROM queue_jobs
    WHERE status IN ('completed', 'failed', 'cancelled') AND completed_at < now() - make_interval(secs => $1)
      AND created_at < now() - make_interval(secs => $1)
    LIMIT $2
    FOR UPDATE SKIP LOCKED)
  RETURNING id, job_type, status, error, completed_at`;

const EXPIRY_BATCH = 1000;

/** The per-status count deltas the table's triggers append, folded into one row per status. */
const FOLD_COUNTS = foldCountDeltas('queue_job_counts', 'status');

const INTENT_LIVE = `SELECT EXISTS (SELECT 1 FROM queue_cancellation_intents i WHERE i.run_id = $1 AND ${intentIsLive('i', '$2')}) AS live`;

const DELETE_STALE_INTENTS = `DELETE FROM queue_cancellation_intents i WHERE NOT (${intentIsLive('i', '$1')})`;

// Batched statements name their rows with `id = ANY(...)` so PostgreSQL reaches them through the
// primary key; a plain join against the batch lets it prefer a sequential scan of the whole table.

/**
 * Every statement a worker runs about jobs, each a single SQL statement; writes are fenced by
 * (id, attempt, locked_by). The batch statements are planned per call (unnamed): a cached generic
 * plan cannot see how many ids a batch holds and picks nested loops over whole-table scans.
 * The claim is prepared: planning it was most of a small claim's time in the database (0.3 to 0.6 ms),
 * on the path from enqueue to start. PostgreSQL uses the cached plan while the queue is short, and plans
 * a long one's claims afresh. Its pool's connections must be set up with setUpConnection.
 */
export class JobStore implements WorkStore<ClaimedJob> {
  readonly readyChannel = JOBS_READY_CHANNEL;

  /**
   * Rules out plans that scan a whole table (a table no index serves is still scanned). A claim plan cached
   * while `queue_jobs` looked empty, as on a new deployment, found the rows it had locked by reading every
   * row, and kept doing so as a backlog grew, until the next ANALYZE: 80 ms a claim with 100,000 jobs queued,
   * against 2 ms. Every statement here finds its rows through an index. A SET, not a startup option, which
   * poolers such as PgBouncer refuse; in a transaction-mode pool it would not follow the worker (the worker
   * needs session connections anyway, to LISTEN).
   */
  static async setUpConnection(client: ClientBase): Promise<void> {
    await client.query('SET enable_seqscan = off');
  }

  constructor(
    private readonly pool: Pool,
    readonly workerId: string,
    private readonly cancelIntentTtlSeconds: number,
  ) {}

  /**
   * Claims up to `limit` jobs; the first `startNow` start at once (`started`), the rest are reserved
   * and are started by start(), or by finish() when they are done before their start was written.
   */
  async claim(limit: number, startNow: number, jobTypes: string[]): Promise<ClaimedJob[]> {
    const { rows } = await this.pool.query<ClaimRow>({
      name: 'queue_claim',
      text: CLAIM,
      values: [this.workerId, limit, jobTypes, this.cancelIntentTtlSeconds, startNow],
    });
    return rows.map((row) => ({
      id: row.id,
      jobType: row.job_type,
      componentType: row.component_type,
      componentId: row.component_id,
      sessionId: row.session_id,
      userId: row.user_id,
      payload: row.payload,
      attempt: row.attempt,
      maxAttempts: row.max_attempts,
      started: row.started,
      cancelRequested: row.cancel_requested,
    }));
  }

  /** Starts reserved jobs in one statement; returns those still held, with the attempt they now run. */
  async start(jobs: readonly HeldJob[]): Promise<Map<string, StartedAttempt>> {
    const { rows } = await this.pool.query<{ id: string; attempt: number; cancel_requested: boolean }>({
      text: START,
      values: [this.workerId, jobs.map((job) => job.id), jobs.map((job) => job.attempt), this.cancelIntentTtlSeconds],
    });
    return new Map(rows.map((row) => [row.id, { attempt: row.attempt, cancelRequested: row.cancel_requested }]));
  }

  /** Records many outcomes in one statement; returns the states written (fence-rejected attempts are absent). */
  async finish(attempts: readonly FinishedAttempt[], client: ClientBase | Pool = this.pool): Promise<RecordedState[]> {
    const values = [
      this.workerId,
      attempts.map((attempt) => attempt.id),
      attempts.map((attempt) => attempt.attempt),
      attempts.map((attempt) => attempt.outcome),
      attempts.map((attempt) => attempt.error),
      attempts.map((attempt) => attempt.reserved === true),
    ];
    return (await client.query<RecordedState>({ text: FINISH, values })).rows;
  }

  /** Renews the lock of the jobs still held; returns the ids this worker still holds. */
  async heartbeat(jobs: readonly HeldJob[]): Promise<Set<string>> {
    const values = [this.workerId, jobs.map((job) => job.id), jobs.map((job) => job.attempt)];
    const { rows } = await this.pool.query<{ id: string }>({ text: HEARTBEAT, values });
    return new Set(rows.map((row) => row.id));
  }

  async stale(lockGraceSeconds: number, held: readonly string[]): Promise<string[]> {
    const values = [lockGraceSeconds, this.workerId, held];
    return (await this.pool.query<{ id: string }>({ name: 'queue_stale', text: STALE, values })).rows.map((row) => row.id);
  }

  async sweep(lockGraceSeconds: number, held: readonly string[], suspects: readonly string[]): Promise<SweptWork[]> {
    const values = [lockGraceSeconds, this.workerId, held, suspects];
    return (await this.pool.query({ name: 'queue_sweep', text: SWEEP, values })).rows;
  }

  async release(jobs: readonly HeldJob[]): Promise<string[]> {
    const values = [this.workerId, jobs.map((job) => job.id), jobs.map((job) => job.attempt)];
    const { rows } = await this.pool.query<{ id: string }>({ text: RELEASE, values });
    return rows.map((row) => row.id);
  }

  /** Folds the count deltas when there are more rows than statuses. */
  async maintain(): Promise<void> {
    await this.pool.query({ name: 'queue_fold_counts', text: FOLD_COUNTS, values: [JOB_STATUSES.length] });
  }

  async cancellationRequested(id: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ live: boolean }>({
      name: 'queue_intent_live',
      text: INTENT_LIVE,
      values: [id, this.cancelIntentTtlSeconds],
    });
    return rows[0].live;
  }

  /**
   * Deletes terminal jobs past retention, a batch per transaction until none is left; `settle`
   * gets each batch inside its transaction (the job types' expire hooks). Returns how many went.
   */
  async deleteExpired(retentionSeconds: number, settle: (tx: ClientBase, jobs: ExpiredRow[]) => Promise<void>): Promise<number> {
    let deleted = 0;
    let batch: number;
    do {
      batch = await this.deleteExpiredBatch(retentionSeconds, settle);
      deleted += batch;
    } while (batch === EXPIRY_BATCH);
    await this.pool.query({ name: 'queue_delete_stale_intents', text: DELETE_STALE_INTENTS, values: [this.cancelIntentTtlSeconds] });
    return deleted;
  }

  private async deleteExpiredBatch(
    retentionSeconds: number,
    settle: (tx: ClientBase, jobs: ExpiredRow[]) => Promise<void>,
  ): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<ExpiredRow>({ text: DELETE_EXPIRED, values: [retentionSeconds, EXPIRY_BATCH] });
      await settle(client, rows);
      return rows.length;
    });
  }
}

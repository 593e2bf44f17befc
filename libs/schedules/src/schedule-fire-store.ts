import type { ClientBase, Pool } from 'pg';

import { foldCountDeltas, inTransaction } from '@app/database';
import { FinishedAttempt, HeldJob, HeldWork, JobOutcome, RecordedState, StartedAttempt, SweptWork, WorkStore } from '@app/queue';

import { JsonObject } from './schedule.entity';
import { fireInFlight } from './schedule-overlap';
import { COUNTED_SKIP_REASONS, ScheduleAttempt, ScheduleRunStatus } from './schedule-run.entity';

export const SCHEDULE_FIRE_JOB_TYPE = 'schedule_fire';
export const SCHEDULE_FIRES_READY_CHANNEL = 'schedule_fires_ready';

/** A fire a worker has claimed, with what it needs from its schedule. */
export interface ClaimedFire extends HeldWork {
  /** The worker holding the fire: the fence of the writes its handler makes on the way (retried attempts). */
  lockedBy: string;
  scheduleId: string;
  method: string;
  endpoint: string;
  payload: JsonObject | null;
  timeoutSeconds: number;
  maxRetries: number;
  retryDelaySeconds: number;
  enabled: boolean;
  ownerServiceAccountId: string | null;
  targetType: string | null;
  targetId: string | null;
  /** What made the fire: its cron slot, or a manual trigger. */
  trigger: string;
  /** Seconds from the time the fire was due to its start. */
  lagSeconds: number;
}

/** What a fire's handler reports with its outcome (JobResult.details): the last HTTP attempt, when it made one. */
export interface FireDetails {
  last?: ScheduleAttempt;
}

/** A fire is one attempt of the engine: its retries are HTTP attempts inside it, never a second fire. */
const FIRE_ATTEMPT = 1;

/** The status a fire's history shows for each outcome its handler reports. */
export const FIRE_STATUS: Record<JobOutcome, Exclude<ScheduleRunStatus, 'queued' | 'running'>> = {
  completed: 'success',
  failed: 'failed',
  // The handler cancels a fire it does not make (the schedule was disabled before it started).
  cancelled: 'skipped',
  paused: 'failed',
  // Never reported: every worker can make every fire. Were one deferred, it must not fire again later.
  deferred: 'failed',
};

/**
 * Queued fires that could start: any of an `allow` schedule; of another, its oldest queued fire when
 * none of it is in flight. Fires that must wait never fill the window and hold back other schedules.
 * Each schedule's oldest queued fire comes from one sorted pass over the queued fires: a check per fire
 * for an older one was planned, right after a tick queued a burst (statistics not yet updated), as a
 * read of every queued fire, and a claim among 1,000 fires due together took 100-250 ms.
 * Each candidate's schedule is looked up by primary key while the claim walks the queued fires in
 * (due_at, id) order and stops at the limit. Joined to schedules directly, the claim was planned as a
 * hash join reading every schedule whenever fires were queued (11 ms a claim at 20,500 schedules, against
 * 1.8 ms). OFFSET 0 keeps the planner from flattening the LATERAL subquery back into that join, so it can
 * only be the inner side of a nested loop; it is still an inner join (a fire without its schedule is none).
 */
const CANDIDATES = `
  WITH heads AS (
    SELECT DISTINCT ON (schedule_id) id FROM schedule_runs WHERE status = 'queued' ORDER BY schedule_id, due_at, id
  ), candidates AS (
    SELECT r.id, r.schedule_id, s.overlap_policy, r.due_at
    FROM schedule_runs r CROSS JOIN LATERAL (SELECT overlap_policy FROM schedules WHERE id = r.schedule_id OFFSET 0) s
    WHERE r.status = 'queued'
      AND (s.overlap_policy = 'allow' OR (r.id IN (SELECT id FROM heads) AND NOT ${fireInFlight('r.schedule_id')}))
    ORDER BY r.due_at, r.id LIMIT $1 FOR UPDATE OF r SKIP LOCKED
  )
  SELECT id, overlap_policy = 'allow' AS allowed,
    CASE WHEN overlap_policy = 'allow' THEN false
      ELSE pg_try_advisory_xact_lock(hashtextextended('schedule-fire:' || schedule_id::text, 0)) END AS locked
  FROM candidates ORDER BY due_at, id`;

/**
 * Starts the chosen fires ($2), of which $3 were chosen because their schedule allows overlap. Those
 * start only if it still does. The others' schedules are locked by this claim: each is checked for a
 * fire in flight once more, with this statement's snapshot, taken after the lock was held, so it sees
 * a fire another worker started and committed in the meantime.
 */
const START_FIRES = `
  UPDATE schedule_runs r SET status = 'running', locked_by = $1, started_at = now(), heartbeat_at = now()
  FROM schedules s
  WHERE r.id = ANY ($2::uuid[]) AND s.id = r.schedule_id
    AND CASE WHEN r.id = ANY ($3::uuid[]) THEN s.overlap_policy = 'allow' ELSE NOT ${fireInFlight('r.schedule_id')} END
  RETURNING r.id, r.locked_by, s.id AS schedule_id, s.method, s.endpoint, s.payload, s.timeout_seconds, s.max_retries,
            s.retry_delay_seconds, s.enabled, s.owner_service_account_id, s.target_type, s.target_id,
            r.trigger, extract(epoch FROM r.started_at - r.due_at)::float8 AS lag_seconds`;

/** Ends fires, with their last attempt when they made one; fenced, and one statement for a batch. */
const FINISH = `
  UPDATE schedule_runs r SET status = v.status, error = v.error, completed_at = now(), heartbeat_at = NULL,
    attempts = r.attempts || v.last, status_code = COALESCE(v.status_code, r.status_code),
    run_id = COALESCE(v.run_id, r.run_id), run_status = COALESCE(v.run_status, r.run_status)
  FROM unnest($2::uuid[], $3::varchar[], $4::text[], $5::jsonb[], $6::int[], $7::varchar[], $8::varchar[])
    AS v(id, status, error, last, status_code, run_id, run_status)
  WHERE r.id = ANY ($2::uuid[]) AND r.id = v.id AND r.locked_by = $1 AND r.status = 'running'
  RETURNING r.id, r.status`;

const HEARTBEAT = `
  UPDATE schedule_runs SET heartbeat_at = now() WHERE id = ANY ($2::uuid[]) AND locked_by = $1 AND status = 'running' RETURNING id`;

/** Running fires whose heartbeat is older than the grace ($1), but those this worker ($2) holds ($3). */
const STALE = `
  SELECT id FROM schedule_runs WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => $1)
    AND NOT (locked_by = $2 AND id = ANY ($3::uuid[]))`;

/** The suspects ($4) still stale: a fire whose worker died is failed, never fired again (its call may have happened). */
const SWEEP = `
  UPDATE schedule_runs SET status = 'failed', completed_at = now(), heartbeat_at = NULL,
    error = 'The worker running this fire was lost; it was not retried'
  WHERE id IN (${STALE} AND id = ANY ($4::uuid[]) FOR UPDATE SKIP LOCKED)
  RETURNING id, status, error, true AS started`;

/** The skipped-fire deltas schedule_runs' triggers append (/metrics), folded into one row per reason. */
const FOLD_SKIP_COUNTS = foldCountDeltas('schedule_fire_skip_counts', 'reason');

interface StartedRow {
  id: string;
  locked_by: string;
  schedule_id: string;
  method: string;
  endpoint: string;
  payload: JsonObject | null;
  timeout_seconds: number;
  max_retries: number;
  retry_delay_seconds: number;
  enabled: boolean;
  owner_service_account_id: string | null;
  target_type: string | null;
  target_id: string | null;
  trigger: string;
  lag_seconds: number;
}

function toClaimedFire(row: StartedRow): ClaimedFire {
  return {
    id: row.id,
    jobType: SCHEDULE_FIRE_JOB_TYPE,
    attempt: FIRE_ATTEMPT,
    maxAttempts: FIRE_ATTEMPT,
    started: true,
    cancelRequested: false,
    lockedBy: row.locked_by,
    scheduleId: row.schedule_id,
    method: row.method,
    endpoint: row.endpoint,
    payload: row.payload,
    timeoutSeconds: row.timeout_seconds,
    maxRetries: row.max_retries,
    retryDelaySeconds: row.retry_delay_seconds,
    enabled: row.enabled,
    ownerServiceAccountId: row.owner_service_account_id,
    targetType: row.target_type,
    targetId: row.target_id,
    trigger: row.trigger,
    lagSeconds: row.lag_seconds,
  };
}

/**
 * The queue engine's SQL for schedule fires (schedule_runs). Every fire is claimed started: a fire
 * has no prefetch, no cancellation and no second attempt, and its claim obeys the schedule's overlap
 * policy. Every write is fenced by (id, locked_by, status = 'running').
 */
export class ScheduleFireStore implements WorkStore<ClaimedFire> {
  readonly readyChannel = SCHEDULE_FIRES_READY_CHANNEL;

  constructor(
    private readonly pool: Pool,
    readonly workerId: string,
  ) {}

  /**
   * Takes up to `limit` queued fires (oldest slot first), in two statements. A schedule that does not
   * `allow` overlap starts one fire at a time: its oldest queued fire, only when none of it runs. The
   * first statement picks the fires and takes a transaction-scoped advisory lock per such schedule; the
   * second starts them, checking again for a fire in flight with a snapshot taken once the lock is
   * held, so two workers never start two fires of one schedule.
   */
  claim(limit: number): Promise<ClaimedFire[]> {
    return inTransaction(this.pool, async (client) => {
      const { rows: queued } = await client.query<{ id: string; allowed: boolean; locked: boolean }>({
        text: CANDIDATES,
        values: [limit],
      });
      // Neither allowed nor locked: another worker is deciding that schedule right now.
      const start = queued.filter((fire) => fire.allowed || fire.locked).map((fire) => fire.id);
      if (start.length === 0) {
        return [];
      }
      const allowed = queued.filter((fire) => fire.allowed).map((fire) => fire.id);
      const { rows } = await client.query<StartedRow>({ text: START_FIRES, values: [this.workerId, start, allowed] });
      return rows.map(toClaimedFire);
    });
  }

  /** Never called with anything: fires are claimed started. */
  async start(): Promise<Map<string, StartedAttempt>> {
    return new Map();
  }

  async finish(attempts: readonly FinishedAttempt[], client: ClientBase | Pool = this.pool): Promise<RecordedState[]> {
    const last = attempts.map((attempt) => (attempt.details as FireDetails | undefined)?.last);
    const values = [
      this.workerId,
      attempts.map((attempt) => attempt.id),
      attempts.map((attempt) => FIRE_STATUS[attempt.outcome]),
      attempts.map((attempt) => attempt.error),
      last.map((attempt) => JSON.stringify(attempt ? [attempt] : [])),
      last.map((attempt) => attempt?.status_code ?? null),
      last.map((attempt) => attempt?.run_id ?? null),
      last.map((attempt) => attempt?.run_status ?? null),
    ];
    return (await client.query<RecordedState>({ text: FINISH, values })).rows;
  }

  async heartbeat(held: readonly HeldJob[]): Promise<Set<string>> {
    const { rows } = await this.pool.query<{ id: string }>({ text: HEARTBEAT, values: [this.workerId, held.map((fire) => fire.id)] });
    return new Set(rows.map((row) => row.id));
  }

  async stale(lockGraceSeconds: number, held: readonly string[]): Promise<string[]> {
    const values = [lockGraceSeconds, this.workerId, held];
    return (await this.pool.query<{ id: string }>({ name: 'schedule_fire_stale', text: STALE, values })).rows.map((row) => row.id);
  }

  async sweep(lockGraceSeconds: number, held: readonly string[], suspects: readonly string[]): Promise<SweptWork[]> {
    const values = [lockGraceSeconds, this.workerId, held, suspects];
    return (await this.pool.query<SweptWork>({ name: 'schedule_fire_sweep', text: SWEEP, values })).rows;
  }

  /**
   * Nothing is handed back: a fire is never made twice. Stopped at the shutdown deadline, its handler
   * records it as cut; one that cannot is failed by the sweeper once its heartbeat is stale.
   */
  async release(): Promise<string[]> {
    return [];
  }

  async cancellationRequested(): Promise<boolean> {
    return false;
  }

  async maintain(): Promise<void> {
    await this.pool.query({ name: 'schedule_fold_skip_counts', text: FOLD_SKIP_COUNTS, values: [COUNTED_SKIP_REASONS.length] });
  }
}

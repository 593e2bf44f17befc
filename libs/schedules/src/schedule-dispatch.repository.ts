import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

import { nextRunAt } from './cron';
import { CatchupPolicy, JsonObject, OverlapPolicy } from './schedule.entity';
import { admit, fireInFlight, FireState, fireStates, SKIP_ERRORS } from './schedule-overlap';
import { ScheduleAttempt, ScheduleRunStatus } from './schedule-run.entity';

/** A fire a worker has claimed, with what it needs from its schedule. */
export interface ClaimedFire {
  runId: string;
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
  trigger: string;
  /** Seconds from the time the fire was due to its claim. */
  lagSeconds: number;
}

interface DueRow {
  id: string;
  cron_expr: string;
  timezone: string;
  next_run_at: Date;
  catchup_policy: CatchupPolicy;
  catchup_limit: number;
  overlap_policy: OverlapPolicy;
  db_now: Date;
}

/** A slot queued later than this after its time was missed (no worker ran): the catch-up policy decides. */
export const MISSED_AFTER_MS = 60_000;
/** Slots walked through per schedule and recovery (70 days of a per-minute schedule), and skipped ones recorded: bounded work after a long outage. */
const MISSED_SLOTS_SEEN = 100_000;
const MISSED_SLOTS_RECORDED = 100;

/** Which due slots of one schedule fire now, and which are recorded as skipped (`missed`). */
export function catchUp(
  row: Pick<DueRow, 'cron_expr' | 'timezone' | 'next_run_at' | 'catchup_policy' | 'catchup_limit'>,
  now: Date,
): { fire: Date[]; missed: Date[] } {
  // Only the latest slots matter (fired, or recorded as missed), so only those are kept while walking to now.
  const window = row.catchup_limit + MISSED_SLOTS_RECORDED;
  const slots: Date[] = [row.next_run_at];
  let seen = 1;
  for (
    let slot = nextRunAt(row.cron_expr, row.timezone, row.next_run_at);
    slot && slot <= now && seen < MISSED_SLOTS_SEEN;
    slot = nextRunAt(row.cron_expr, row.timezone, slot)
  ) {
    slots.push(slot);
    seen += 1;
    if (slots.length > window) {
      slots.shift();
    }
  }
  const isMissed = (slot: Date) => now.getTime() - slot.getTime() > MISSED_AFTER_MS;
  const latest = slots[slots.length - 1];
  if (slots.length === 1 && !isMissed(latest)) {
    return { fire: [latest], missed: [] };
  }
  const keep = { once: 1, skip: isMissed(latest) ? 0 : 1, all: row.catchup_limit }[row.catchup_policy];
  const fire = keep > 0 ? slots.slice(-keep) : [];
  return { fire, missed: slots.slice(0, slots.length - fire.length).slice(-MISSED_SLOTS_RECORDED) };
}

/**
 * The slot after now for each due row. Never earlier than the database's now: a worker clock behind
 * it must not re-queue the same slot. Rows sharing an expression and zone (common: `0 * * * *`) share
 * one computation per second, which is all croner's five-field resolution can tell apart.
 */
function nextSlots(due: DueRow[]): (Date | null)[] {
  const computed = new Map<string, Date | null>();
  return due.map((row) => {
    // Due rows have next_run_at <= db_now, so the slot is the first one after whichever clock is ahead.
    const from = new Date(Math.max(Date.now(), row.db_now.getTime()));
    const key = `${row.cron_expr}\u0000${row.timezone}\u0000${Math.floor(from.getTime() / 1000)}`;
    if (!computed.has(key)) {
      computed.set(key, nextRunAt(row.cron_expr, row.timezone, from));
    }
    return computed.get(key)!;
  });
}

function toClaimedFire(row: Record<string, unknown>): ClaimedFire {
  return {
    runId: row.run_id as string,
    scheduleId: row.schedule_id as string,
    method: row.method as string,
    endpoint: row.endpoint as string,
    payload: row.payload as JsonObject | null,
    timeoutSeconds: row.timeout_seconds as number,
    maxRetries: row.max_retries as number,
    retryDelaySeconds: row.retry_delay_seconds as number,
    enabled: row.enabled as boolean,
    ownerServiceAccountId: row.owner_service_account_id as string | null,
    targetType: row.target_type as string | null,
    targetId: row.target_id as string | null,
    trigger: row.trigger as string,
    lagSeconds: row.lag_seconds as number,
  };
}

/** Slack past the worst case of a fire (every attempt timing out) before a running fire counts as lost. */
const LOST_AFTER_SLACK_SECONDS = 60;

/**
 * The worker's SQL: every statement is one round trip and safe with any number of
 * workers, because rows are taken with FOR UPDATE SKIP LOCKED and every later write
 * about a fire is fenced by (id, locked_by, status = 'running').
 */
@Injectable()
export class ScheduleDispatchRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Turns due schedules into queued fires and advances next_run_at in the same transaction,
   * so a slot is queued exactly once across workers. The next slot is computed from now, so a
   * schedule that missed many slots while no worker ran fires once, not once per missed slot.
   */
  async queueDue(limit: number): Promise<number> {
    return this.db.transaction(async (manager) => {
      const due: DueRow[] = await manager.query(
        `SELECT id, cron_expr, timezone, next_run_at, catchup_policy, catchup_limit, overlap_policy, now() AS db_now FROM schedules
         WHERE enabled AND next_run_at <= now() ORDER BY next_run_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      if (due.length === 0) {
        return 0;
      }
      const ids = due.map((row) => row.id);
      await manager.query(
        `UPDATE schedules s SET next_run_at = v.next_run_at FROM unnest($1::uuid[], $2::timestamptz[]) AS v(id, next_run_at) WHERE s.id = v.id`,
        [ids, nextSlots(due)],
      );
      const states = await fireStates(manager, ids);
      const queued: [string, Date][] = [];
      const skipped: [string, Date, string][] = [];
      for (const row of due) {
        const plan = catchUp(row, row.db_now);
        skipped.push(...plan.missed.map((slot): [string, Date, string] => [row.id, slot, 'missed']));
        admit(row.overlap_policy, states.get(row.id)!, plan.fire.length).forEach((reason, index) =>
          reason ? skipped.push([row.id, plan.fire[index], reason]) : queued.push([row.id, plan.fire[index]]),
        );
      }
      await manager.query(
        `INSERT INTO schedule_runs (id, schedule_id, trigger, status, due_at)
         SELECT gen_random_uuid(), v.id, 'cron', 'queued', v.due_at FROM unnest($1::uuid[], $2::timestamptz[]) AS v(id, due_at)`,
        [queued.map(([id]) => id), queued.map(([, slot]) => slot)],
      );
      if (skipped.length > 0) {
        await manager.query(
          `INSERT INTO schedule_runs (id, schedule_id, trigger, status, reason, due_at, completed_at, error)
           SELECT gen_random_uuid(), v.id, 'cron', 'skipped', v.reason, v.due_at, now(), v.error
           FROM unnest($1::uuid[], $2::timestamptz[], $3::varchar[], $4::text[]) AS v(id, due_at, reason, error)`,
          [
            skipped.map(([id]) => id),
            skipped.map(([, slot]) => slot),
            skipped.map(([, , reason]) => reason),
            skipped.map(([, , reason]) => SKIP_ERRORS[reason as keyof typeof SKIP_ERRORS]),
          ],
        );
      }
      return due.length;
    });
  }

  /**
   * Takes up to `limit` queued fires (oldest slot first) for this worker. A schedule that does not
   * `allow` overlap starts one fire at a time: its oldest queued fire, only when none of it runs. The
   * decision holds a transaction-scoped advisory lock per such schedule, and the running check is a
   * statement made after the lock is held (a fresh snapshot), so two workers never start two fires of
   * one schedule at once.
   */
  async claim(workerId: string, limit: number): Promise<ClaimedFire[]> {
    return this.db.transaction(async (manager) => {
      // Only fires that could start: any of an `allow` schedule; of another, its oldest queued fire when none
      // of it is in flight. Fires that must wait never fill the window and hold back other schedules.
      const queued: { id: string; schedule_id: string; overlap_policy: OverlapPolicy }[] = await manager.query(
        `SELECT r.id, r.schedule_id, s.overlap_policy FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
         WHERE r.status = 'queued'
           AND (s.overlap_policy = 'allow'
                OR (NOT EXISTS (SELECT 1 FROM schedule_runs o WHERE o.schedule_id = r.schedule_id AND o.status = 'queued' AND (o.due_at, o.id) < (r.due_at, r.id))
                    AND NOT ${fireInFlight('r.schedule_id')}))
         ORDER BY r.due_at, r.id LIMIT $1 FOR UPDATE OF r SKIP LOCKED`,
        [limit],
      );
      const serial = [...new Set(queued.filter((fire) => fire.overlap_policy !== 'allow').map((fire) => fire.schedule_id))].sort();
      const locked: { id: string }[] = serial.length
        ? await manager.query(
            `SELECT id FROM unnest($1::uuid[]) AS s(id) WHERE pg_try_advisory_xact_lock(hashtextextended('schedule-fire:' || id::text, 0))`,
            [serial],
          )
        : [];
      const states = locked.length
        ? await fireStates(
            manager,
            locked.map((row) => row.id),
          )
        : new Map<string, FireState>();
      const start: string[] = [];
      const started = new Set<string>();
      for (const fire of queued) {
        const state = states.get(fire.schedule_id);
        if (fire.overlap_policy === 'allow') {
          start.push(fire.id);
        } else if (state && !state.running && !started.has(fire.schedule_id)) {
          // Not locked (no state): another worker is deciding this schedule right now.
          start.push(fire.id);
          started.add(fire.schedule_id);
        }
      }
      if (start.length === 0) {
        return [];
      }
      const [rows]: [Record<string, unknown>[], number] = await manager.query(
        `UPDATE schedule_runs r
         SET status = 'running', locked_by = $1, started_at = now(),
             deadline_at = now() + make_interval(secs => (s.max_retries + 1) * s.timeout_seconds + s.max_retries * s.retry_delay_seconds + ${LOST_AFTER_SLACK_SECONDS})
         FROM schedules s
         WHERE r.id = ANY ($2::uuid[]) AND s.id = r.schedule_id
         RETURNING r.id AS run_id, s.id AS schedule_id, s.method, s.endpoint, s.payload, s.timeout_seconds, s.max_retries,
                   s.retry_delay_seconds, s.enabled, s.owner_service_account_id, s.target_type, s.target_id,
                   r.trigger, extract(epoch FROM r.started_at - r.due_at)::float8 AS lag_seconds`,
        [workerId, start],
      );
      return rows.map(toClaimedFire);
    });
  }

  /** Appends an attempt to a fire that goes on (a retry follows). */
  async recordAttempt(runId: string, workerId: string, attempt: ScheduleAttempt): Promise<void> {
    await this.db.query(
      `UPDATE schedule_runs SET attempts = attempts || $3::jsonb, status_code = $4, error = $5,
              run_id = COALESCE($6, run_id), run_status = COALESCE($7, run_status)
       WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
      [runId, workerId, JSON.stringify([attempt]), attempt.status_code, attempt.error, attempt.run_id, attempt.run_status],
    );
  }

  /** Ends a fire, with its last attempt when it made one: one statement for the common single-attempt fire. */
  async finish(
    runId: string,
    workerId: string,
    status: Exclude<ScheduleRunStatus, 'queued' | 'running'>,
    error: string | null,
    last?: ScheduleAttempt,
  ): Promise<void> {
    await this.db.query(
      `UPDATE schedule_runs SET status = $3, error = $4, completed_at = now(), attempts = attempts || $5::jsonb,
              status_code = COALESCE($6, status_code), run_id = COALESCE($7, run_id), run_status = COALESCE($8, run_status)
       WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
      [
        runId,
        workerId,
        status,
        error,
        JSON.stringify(last ? [last] : []),
        last?.status_code ?? null,
        last?.run_id ?? null,
        last?.run_status ?? null,
      ],
    );
  }

  /** Fires whose worker died mid-way are failed, not re-run: the call may already have happened. */
  async failLost(): Promise<void> {
    await this.db.query(
      `UPDATE schedule_runs SET status = 'failed', completed_at = now(), error = 'The worker running this fire was lost; it was not retried'
       WHERE status = 'running' AND deadline_at < now()`,
    );
  }

  /** The system disabling a schedule: it never fires again until someone re-enables it. */
  async disable(scheduleId: string, reason: string): Promise<void> {
    await this.db.query(
      `UPDATE schedules SET enabled = false, next_run_at = NULL, disabled_reason = $2, updated_at = now() WHERE id = $1`,
      [scheduleId, reason],
    );
  }
}

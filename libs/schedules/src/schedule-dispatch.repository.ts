import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

import { timeOrderedId } from '@app/database';

import { latestSlots, nextRunAt } from './cron';
import { CatchupPolicy, OverlapPolicy } from './schedule.entity';
import { SCHEDULE_FIRES_READY_CHANNEL } from './schedule-fire-store';
import { admit, fireStates, SKIP_ERRORS } from './schedule-overlap';
import { ScheduleAttempt } from './schedule-run.entity';

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

/** The disabled_reason of a schedule whose cron expression or time zone this version cannot read. */
export const UNREADABLE = 'unreadable_schedule';

/** A slot queued later than this after its time was missed (no worker ran): the catch-up policy decides. */
export const MISSED_AFTER_MS = 60_000;
/** Skipped slots recorded per schedule and recovery: the latest ones. */
const MISSED_SLOTS_RECORDED = 100;

/** Which due slots of one schedule fire now, and which are recorded as skipped (`missed`). */
export function catchUp(
  row: Pick<DueRow, 'cron_expr' | 'timezone' | 'next_run_at' | 'catchup_policy' | 'catchup_limit'>,
  now: Date,
): { fire: Date[]; missed: Date[] } {
  // Only the latest slots matter (fired, or recorded as missed). Walked forward while few (the usual case: one,
  // from the slot cache); past `window` the outage was long, and the latest ones are read backwards from now
  // instead: a week of a per-minute schedule cost half a second of walking, seventy days five, per schedule.
  const window = row.catchup_limit + MISSED_SLOTS_RECORDED + 1; // and the latest, which may be on time
  let slots: Date[] = [row.next_run_at];
  for (
    let slot = nextRunAt(row.cron_expr, row.timezone, row.next_run_at);
    slot && slot <= now;
    slot = nextRunAt(row.cron_expr, row.timezone, slot)
  ) {
    slots.push(slot);
    if (slots.length > window) {
      slots = latestSlots(row.cron_expr, row.timezone, row.next_run_at, now, window);
      break;
    }
  }
  // The latest slot is on time unless it too is more than a minute late, and fires whatever the policy; the
  // others were missed, and the policy says how many of them (the latest) fire besides it.
  const latestOnTime = now.getTime() - slots[slots.length - 1].getTime() <= MISSED_AFTER_MS;
  const missedSlots = latestOnTime ? slots.slice(0, -1) : slots;
  const caughtUp = { once: 1, skip: 0, all: row.catchup_limit }[row.catchup_policy];
  const firstFired = Math.max(missedSlots.length - caughtUp, 0);
  return {
    fire: [...missedSlots.slice(firstFired), ...(latestOnTime ? slots.slice(-1) : [])],
    missed: missedSlots.slice(0, firstFired).slice(-MISSED_SLOTS_RECORDED),
  };
}

/**
 * The slot after now for a due row, by the database's clock, which every worker shares: a worker clock
 * behind it would re-queue the slot just queued, one ahead of it would skip slots nobody fired or recorded.
 * Rows sharing an expression and zone share the computation (nextRunAt). Or, for a schedule stored under
 * rules this version refuses (a time zone gone from the ICU data, a cron form croner no longer takes), why.
 */
function nextSlot(row: DueRow): { next: Date | null } | { unreadable: string } {
  try {
    // Due rows have next_run_at <= db_now: the next slot is the first one after db_now.
    return { next: nextRunAt(row.cron_expr, row.timezone, row.db_now) };
  } catch (error) {
    return { unreadable: `${UNREADABLE}: ${error instanceof Error ? error.message : String(error)}`.slice(0, 255) };
  }
}

/**
 * The schedule side of the worker's SQL: turning due slots into queued fires, and the writes a fire
 * makes about itself on its way. Claiming, heartbeats, outcomes and lost fires are the queue
 * engine's (ScheduleFireStore). Safe with any number of workers: rows are taken with FOR UPDATE
 * SKIP LOCKED, and a fire's writes are fenced by (id, locked_by, status = 'running').
 */
@Injectable()
export class ScheduleDispatchRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Turns due schedules into queued fires and advances next_run_at in the same transaction,
   * so a slot is queued exactly once across workers. The next slot is computed from now; the slots a schedule
   * missed while no worker ran fire as its catch-up policy says (catchUp).
   */
  async queueDue(limit: number): Promise<number> {
    return this.db.transaction(async (manager) => {
      const taken: DueRow[] = await manager.query(
        `SELECT id, cron_expr, timezone, next_run_at, catchup_policy, catchup_limit, overlap_policy, now() AS db_now FROM schedules
         WHERE enabled AND next_run_at <= now() ORDER BY next_run_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      const planned = taken.map((row) => ({ row, ...nextSlot(row) }));
      // A schedule this version cannot read must not fail every tick: as the oldest due row it would stop them all.
      const broken = planned.flatMap((plan) => ('unreadable' in plan ? [plan] : []));
      if (broken.length > 0) {
        await manager.query(
          `UPDATE schedules s SET enabled = false, next_run_at = NULL, disabled_reason = v.reason, updated_at = now()
           FROM unnest($1::uuid[], $2::varchar[]) AS v(id, reason) WHERE s.id = v.id`,
          [broken.map(({ row }) => row.id), broken.map(({ unreadable }) => unreadable)],
        );
      }
      const readable = planned.flatMap((plan) => ('next' in plan ? [plan] : []));
      if (readable.length === 0) {
        return taken.length;
      }
      const due = readable.map(({ row }) => row);
      const ids = due.map((row) => row.id);
      await manager.query(
        `UPDATE schedules s SET next_run_at = v.next_run_at FROM unnest($1::uuid[], $2::timestamptz[]) AS v(id, next_run_at) WHERE s.id = v.id`,
        [ids, readable.map(({ next }) => next)],
      );
      const states = await fireStates((text, values) => manager.query(text, values), ids);
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
         SELECT v.run_id, v.id, 'cron', 'queued', v.due_at FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS v(run_id, id, due_at)`,
        [queued.map(() => timeOrderedId()), queued.map(([id]) => id), queued.map(([, slot]) => slot)],
      );
      if (queued.length > 0) {
        // Delivered at commit: every worker's fire engine claims now, not at its next poll.
        await manager.query(`SELECT pg_notify($1, '')`, [SCHEDULE_FIRES_READY_CHANNEL]);
      }
      if (skipped.length > 0) {
        await manager.query(
          `INSERT INTO schedule_runs (id, schedule_id, trigger, status, reason, due_at, completed_at, error)
           SELECT v.run_id, v.id, 'cron', 'skipped', v.reason, v.due_at, now(), v.error
           FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::varchar[], $5::text[]) AS v(run_id, id, due_at, reason, error)`,
          [
            skipped.map(() => timeOrderedId()),
            skipped.map(([id]) => id),
            skipped.map(([, slot]) => slot),
            skipped.map(([, , reason]) => reason),
            skipped.map(([, , reason]) => SKIP_ERRORS[reason as keyof typeof SKIP_ERRORS]),
          ],
        );
      }
      return taken.length;
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

  /** The run a fire's call started, and the call's status, on the fire while the run is followed. */
  async noteRun(runId: string, workerId: string, statusCode: number, run: { runId: string; status: string }): Promise<void> {
    await this.db.query(
      `UPDATE schedule_runs SET status_code = $3, run_id = $4, run_status = $5
       WHERE id = $1 AND locked_by = $2 AND status = 'running'`,
      [runId, workerId, statusCode, run.runId, run.status],
    );
  }

  /** Whether a fire's next retry should go out: its schedule still exists and is enabled (a pause stops retries too), and this worker still holds it. */
  async mayRetry(runId: string, workerId: string): Promise<boolean> {
    const rows: { enabled: boolean }[] = await this.db.query(
      `SELECT s.enabled FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
       WHERE r.id = $1 AND r.locked_by = $2 AND r.status = 'running'`,
      [runId, workerId],
    );
    return rows[0]?.enabled === true;
  }

  /** The system disabling a schedule: it never fires again until someone re-enables it. */
  async disable(scheduleId: string, reason: string): Promise<void> {
    await this.db.query(
      `UPDATE schedules SET enabled = false, next_run_at = NULL, disabled_reason = $2, updated_at = now() WHERE id = $1`,
      [scheduleId, reason],
    );
  }
}

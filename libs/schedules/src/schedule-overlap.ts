import { jobInFlight } from '@app/queue';

import { OverlapPolicy } from './schedule.entity';
import { SkipReason } from './schedule-run.entity';

/** Runs one statement and answers its rows: TypeORM's `manager.query` or a pg client's, whichever holds the transaction. */
export type SqlRunner = <Row>(text: string, values: unknown[]) => Promise<Row[]>;

/** What a schedule has going when a new fire of it is created. */
export interface FireState {
  /** A fire is running (a targeted fire runs until the run it started ends), or the latest fire gave up following a run that is not final. */
  running: boolean;
  /** Fires queued and not yet started. */
  queued: number;
}

const UUID = `'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'`;

/**
 * SQL: a fire of schedule `schedule` (a column or parameter) is in flight. One of its fires runs (a
 * targeted fire runs until the run it started ends), or its latest finished fire gave up following a
 * background run that is still queued or running. A paused run waits for an operator: it does not hold
 * the schedule. run_id comes from an endpoint's answer, so it is compared as a uuid only when it is one.
 */
export function fireInFlight(schedule: string): string {
  const latestFollowedRun = `(SELECT CASE WHEN f.run_id ~ ${UUID} THEN f.run_id::uuid END FROM schedule_runs f
    WHERE f.schedule_id = ${schedule} AND f.status IN ('success', 'failed') ORDER BY f.completed_at DESC LIMIT 1)`;
  return `(EXISTS (SELECT 1 FROM schedule_runs f WHERE f.schedule_id = ${schedule} AND f.status = 'running')
    OR ${jobInFlight(latestFollowedRun)})`;
}

/**
 * Per schedule: is a fire of it in flight, and how many wait? One statement for any number of
 * schedules; the partial index on (schedule_id) for queued and running fires serves it.
 */
export async function fireStates(sql: SqlRunner, scheduleIds: string[]): Promise<Map<string, FireState>> {
  const rows = await sql<{ id: string; running: boolean; queued: number }>(
    `SELECT s.id, ${fireInFlight('s.id')} AS running,
            (SELECT count(*)::int FROM schedule_runs r WHERE r.schedule_id = s.id AND r.status = 'queued') AS queued
     FROM unnest($1::uuid[]) AS s(id)`,
    [scheduleIds],
  );
  return new Map(rows.map((row) => [row.id, { running: row.running, queued: row.queued }]));
}

/**
 * Which of `count` new fires (oldest first) are queued and which are skipped, by the schedule's
 * overlap policy. A fire overlaps while another fire of the schedule runs or waits. Fires created
 * together (a catch-up's missed slots) are a backlog, not an overlap: queued fires of a schedule
 * that does not `allow` overlap start one at a time (see the worker's claim).
 */
export function admit(policy: OverlapPolicy, state: FireState, count: number): (SkipReason | null)[] {
  const busy = state.running || state.queued > 0;
  if (policy === 'allow' || !busy) {
    return Array<SkipReason | null>(count).fill(null);
  }
  if (policy === 'skip') {
    return Array<SkipReason | null>(count).fill('overlap');
  }
  // buffer_one: one may wait for the fire in flight; it is the newest, the rest are dropped.
  return Array.from({ length: count }, (_, index): SkipReason | null => (state.queued === 0 && index === count - 1 ? null : 'buffer_full'));
}

export const SKIP_ERRORS: Record<SkipReason, string> = {
  overlap: 'The previous fire was still in flight (overlap_policy skip)',
  buffer_full: 'A fire was already waiting for the previous one (overlap_policy buffer_one)',
  missed: 'Slot missed while no worker ran; not fired (catchup_policy)',
};

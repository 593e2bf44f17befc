import { timeOrderedId } from '@app/database';

import { JobPayload } from './job.entity';
import { RUN_JOB_TYPE } from './job-status';
import { JOBS_READY_CHANNEL } from './notify';

export interface EnqueueRequest {
  /** The job id: for a background run, the run id. Generated when absent. */
  id?: string;
  jobType?: string;
  componentType: string;
  componentId: string;
  sessionId: string;
  userId: string | null;
  payload: JobPayload;
  idempotencyKey?: string | null;
  maxAttempts?: number;
}

/** Anything that runs a parameterised statement and hands back its rows: a pg Pool or client, or a TypeORM EntityManager. */
export interface Queryable {
  query(text: string, values: unknown[]): Promise<unknown>;
}

/**
 * Inserts any number of jobs in one statement and, when any was new, notifies idle workers;
 * the notification is delivered on commit, never before the jobs are visible. A job whose
 * idempotency key (per user) or id already exists is skipped. Returns the ids inserted.
 */
const ENQUEUE_SQL = `
  WITH inserted AS (
    INSERT INTO queue_jobs (id, job_type, component_type, component_id, session_id, user_id, payload, idempotency_key, max_attempts)
    SELECT * FROM unnest($1::uuid[], $2::varchar[], $3::varchar[], $4::varchar[], $5::varchar[], $6::varchar[], $7::jsonb[], $8::varchar[], $9::int[])
    ON CONFLICT DO NOTHING
    RETURNING id
  )
  SELECT ids, CASE WHEN cardinality(ids) > 0 THEN pg_notify('${JOBS_READY_CHANNEL}', '') END AS notified
  FROM (SELECT coalesce(array_agg(id), '{}') AS ids FROM inserted) AS batch`;

const BULK_ANALYZE_THRESHOLD = 1000;

/** Placeholders (`$n`, or SQL expressions over the source's columns) for the columns of a job made with its subject. */
export interface JobColumns {
  componentType: string;
  componentId: string;
  sessionId: string;
  userId: string;
  payload: string;
  idempotencyKey: string;
}

/**
 * For a statement that creates a job's subject (a run) and the job in one round trip: CTE bodies
 * that insert one run job per row of `source` (a CTE, or a join of CTEs, whose `id` becomes the job id) and then
 * notify idle workers, delivered on commit. `job` then yields the ids inserted.
 */
export function enqueueWith(source: string, columns: JobColumns): { job: string; notified: string } {
  return {
    job: `INSERT INTO queue_jobs (id, job_type, component_type, component_id, session_id, user_id, payload, idempotency_key, max_attempts)
          SELECT id, '${RUN_JOB_TYPE}', ${columns.componentType}, ${columns.componentId}, ${columns.sessionId}, ${columns.userId},
                 ${columns.payload}::jsonb, ${columns.idempotencyKey}, 1
          FROM ${source} RETURNING id`,
    notified: `CASE WHEN EXISTS (SELECT 1 FROM job) THEN pg_notify('${JOBS_READY_CHANNEL}', '') END`,
  };
}

export async function enqueueJobs(db: Queryable, requests: readonly EnqueueRequest[]): Promise<string[]> {
  const columns = requests.map((request) => [
    request.id ?? timeOrderedId(),
    request.jobType ?? RUN_JOB_TYPE,
    request.componentType,
    request.componentId,
    request.sessionId,
    request.userId,
    JSON.stringify(request.payload),
    request.idempotencyKey ?? null,
    request.maxAttempts ?? 1,
  ]);
  const values = Array.from({ length: 9 }, (_, column) => columns.map((row) => row[column]));
  const result = await db.query(ENQUEUE_SQL, values);
  if (requests.length >= BULK_ANALYZE_THRESHOLD) {
    // A bulk load makes the planner's row counts stale until autovacuum catches up, and stale
    // counts turn the ordered claim index scan into a scan-and-sort of every queued job.
    await db.query('ANALYZE queue_jobs', []);
  }
  // pg answers {rows}; a TypeORM EntityManager answers the rows themselves.
  const rows = (Array.isArray(result) ? result : (result as { rows: { ids: string[] }[] }).rows) as { ids: string[] }[];
  return rows[0]?.ids ?? [];
}

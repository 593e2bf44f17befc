export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled', 'paused'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** States that carry completed_at and never change again except by an operator's requeue. */
export const TERMINAL_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'cancelled'];

/**
 * SQL: the job whose id is `id` (an expression yielding a uuid) is queued or running. For a statement of
 * another context that must ask in-line (a schedule's overlap check, inside its claim); the queue's table is
 * named here, not there. A paused job is not in flight: it waits for an operator.
 */
export function jobInFlight(id: string): string {
  return `EXISTS (SELECT 1 FROM queue_jobs j WHERE j.id = ${id} AND j.status IN ('queued', 'running'))`;
}

/** The only kind of job today: a background run. */
export const RUN_JOB_TYPE = 'run';
/** Every job type the worker app must have exactly one handler for. */
export const JOB_TYPES: readonly string[] = [RUN_JOB_TYPE];

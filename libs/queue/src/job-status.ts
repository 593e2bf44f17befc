export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled', 'paused'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** States that carry completed_at and never change again except by an operator's requeue. */
export const TERMINAL_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'cancelled'];

/** The only kind of job today: a background run. */
export const RUN_JOB_TYPE = 'run';
/** Every job type the worker app must have exactly one handler for. */
export const JOB_TYPES: readonly string[] = [RUN_JOB_TYPE];

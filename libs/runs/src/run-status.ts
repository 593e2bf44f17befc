import { JOB_STATUSES, JobStatus } from '@app/queue';

/** A run speaks the queue's vocabulary, so a background run and its job never disagree on words. */
export type RunStatus = JobStatus;
export const RUN_STATUSES = JOB_STATUSES;

/** Channel a producer notifies (on commit) so idle workers claim at once instead of at their next poll. */
export const JOBS_READY_CHANNEL = 'queue_jobs_ready';

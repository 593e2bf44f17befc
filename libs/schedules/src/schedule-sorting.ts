export const SCHEDULE_SORT_FIELDS = ['created_at', 'updated_at', 'name', 'next_run_at'] as const;
export type ScheduleSortField = (typeof SCHEDULE_SORT_FIELDS)[number];

export const SCHEDULE_RUN_SORT_FIELDS = ['created_at', 'due_at', 'completed_at'] as const;
export type ScheduleRunSortField = (typeof SCHEDULE_RUN_SORT_FIELDS)[number];

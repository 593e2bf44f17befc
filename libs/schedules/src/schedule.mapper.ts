import { toEpoch } from '@app/database';

import { ScheduleDto, ScheduleRunDto } from './schedule.dto';
import { ScheduleEntity } from './schedule.entity';
import { ScheduleRunEntity } from './schedule-run.entity';

/** Rows to wire shapes; owner fields and worker locks never leave the service. */
export function toScheduleDto(schedule: ScheduleEntity): ScheduleDto {
  return {
    id: schedule.id,
    name: schedule.name,
    method: schedule.method,
    endpoint: schedule.endpoint,
    cron_expr: schedule.cronExpr,
    timezone: schedule.timezone,
    timeout_seconds: schedule.timeoutSeconds,
    max_retries: schedule.maxRetries,
    retry_delay_seconds: schedule.retryDelaySeconds,
    enabled: schedule.enabled,
    user_id: schedule.userId,
    description: schedule.description,
    payload: schedule.payload,
    next_run_at: toEpoch(schedule.nextRunAt),
    managed_by: schedule.managedBy,
    target_type: schedule.targetType,
    target_id: schedule.targetId,
    disabled_reason: schedule.disabledReason,
    overlap_policy: schedule.overlapPolicy,
    catchup_policy: schedule.catchupPolicy,
    catchup_limit: schedule.catchupLimit,
    created_at: toEpoch(schedule.createdAt),
    updated_at: toEpoch(schedule.updatedAt),
  };
}

export function toScheduleRunDto(run: ScheduleRunEntity): ScheduleRunDto {
  return {
    id: run.id,
    schedule_id: run.scheduleId,
    trigger: run.trigger,
    status: run.status,
    reason: run.reason,
    due_at: toEpoch(run.dueAt),
    started_at: toEpoch(run.startedAt),
    completed_at: toEpoch(run.completedAt),
    status_code: run.statusCode,
    error: run.error,
    run_id: run.runId,
    run_status: run.runStatus,
    attempts: run.attempts,
    created_at: toEpoch(run.createdAt),
  };
}

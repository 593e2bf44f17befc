import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsString, IsUUID } from 'class-validator';

import { PageOf, PageQuery } from '@app/pagination';
import { BoolField, IntField, NoDefaults, Optional, StringField, UnknownFieldsRejected, UserIdField } from '@app/validation';

import { CATCHUP_POLICIES, CatchupPolicy, JsonObject, OVERLAP_POLICIES, OverlapPolicy } from './schedule.entity';
import {
  CronExpression,
  Description,
  ManagedBy,
  MaxRetries,
  Payload,
  RetryDelaySeconds,
  ScheduleEndpoint,
  ScheduleMethod,
  ScheduleName,
  TimeoutSeconds,
  TimeZone,
} from './schedule-fields';
import { SKIP_REASONS } from './schedule-run.entity';
import { SCHEDULE_RUN_SORT_FIELDS, SCHEDULE_SORT_FIELDS } from './schedule-sorting';
import { TARGET_TYPES } from './schedule-target';

function PolicyField(values: readonly string[], description: string, fallback: string): PropertyDecorator {
  return (target, key) => {
    ApiProperty({ required: false, enum: values, default: fallback, description })(target, key);
    Optional()(target, key);
    IsIn(values, { message: `${String(key)} must be one of ${values.join(', ')}` })(target, key);
  };
}

const OVERLAP_DESCRIPTION =
  'While the previous fire (its call, or the background run it started) is in flight: `skip` the new one (recorded as skipped), `allow` it, or `buffer_one` (keep at most one waiting)';
const CATCHUP_DESCRIPTION =
  'Slots missed while no worker ran: fire `once` on recovery, `skip` them (recorded as skipped), or fire `all` of them oldest first (at most catchup_limit)';

/** The policy fields of create and PATCH (absent: untouched on PATCH, the defaults on create). */
class SchedulePolicyFields {
  @PolicyField(OVERLAP_POLICIES, OVERLAP_DESCRIPTION, 'skip') overlap_policy?: OverlapPolicy;
  @PolicyField(CATCHUP_POLICIES, CATCHUP_DESCRIPTION, 'once') catchup_policy?: CatchupPolicy;
  @IntField({
    optional: true,
    min: 1,
    max: 100,
    default: 10,
    description: 'With catchup_policy `all`: the most missed slots fired on recovery (1 to 100)',
  })
  catchup_limit?: number;
}

@UnknownFieldsRejected()
export class CreateScheduleDto extends SchedulePolicyFields {
  @ScheduleName() name!: string;
  @CronExpression() cron_expr!: string;
  @ScheduleEndpoint() endpoint!: string;
  @ScheduleMethod({ optional: true }) method?: string;
  @Description() description?: string | null;
  @Payload() payload?: JsonObject | null;
  @TimeZone({ optional: true }) timezone?: string;
  @TimeoutSeconds() timeout_seconds?: number;
  @MaxRetries() max_retries?: number;
  @RetryDelaySeconds() retry_delay_seconds?: number;
  @BoolField({ optional: true, default: true, description: 'false creates it paused' }) enabled?: boolean;
  @ManagedBy() managed_by?: string | null;

  @UserIdField({
    nullable: true,
    description: 'Owner to attribute the schedule to; only for callers without an identity of their own (security key, open instance)',
  })
  user_id?: string | null;
}

/** The PATCH body: every field optional, absent fields untouched (so none states a default). */
@NoDefaults()
@UnknownFieldsRejected()
export class UpdateScheduleDto extends SchedulePolicyFields {
  @ScheduleName({ optional: true }) name?: string;
  @CronExpression({ optional: true }) cron_expr?: string;
  @ScheduleEndpoint({ optional: true }) endpoint?: string;
  @ScheduleMethod({ optional: true }) method?: string;
  @Description() description?: string | null;
  @Payload() payload?: JsonObject | null;
  @TimeZone({ optional: true }) timezone?: string;
  @TimeoutSeconds() timeout_seconds?: number;
  @MaxRetries() max_retries?: number;
  @RetryDelaySeconds() retry_delay_seconds?: number;
  @BoolField({ optional: true, description: 'false pauses the schedule; true re-arms it and clears disabled_reason' }) enabled?: boolean;

  @StringField({
    optional: true,
    nullable: true,
    maxLength: 500,
    description: 'With enabled: false, why it is paused; kept until it is enabled again',
  })
  disabled_reason?: string | null;
}

export class ListSchedulesQuery extends PageQuery({ maxLimit: 1000, sortFields: SCHEDULE_SORT_FIELDS, defaultSort: 'created_at' }) {
  @BoolField({ optional: true, fromString: true, description: 'Only enabled (true) or disabled (false) schedules' })
  enabled?: boolean;

  @ApiProperty({ required: false, enum: TARGET_TYPES, description: 'Only schedules whose endpoint runs this kind of component' })
  @Optional()
  @IsIn(TARGET_TYPES)
  target_type?: string;

  @StringField({ optional: true, maxLength: 128, description: 'Only schedules whose endpoint runs this component id' })
  target_id?: string;

  @StringField({ optional: true, maxLength: 64, description: 'Only schedules with this managed_by (the tool that keeps them)' })
  managed_by?: string;
}

export class ListScheduleRunsQuery extends PageQuery({ maxLimit: 1000, sortFields: SCHEDULE_RUN_SORT_FIELDS, defaultSort: 'created_at' }) {}

export class ScheduleDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ example: 'POST' }) method!: string;
  @ApiProperty({ example: '/agents/echo-agent/runs' }) endpoint!: string;
  @ApiProperty({ example: '0 9 * * MON-FRI' }) cron_expr!: string;
  @ApiProperty({ example: 'Europe/Berlin' }) timezone!: string;
  @ApiProperty({ type: 'integer' }) timeout_seconds!: number;
  @ApiProperty({ type: 'integer' }) max_retries!: number;
  @ApiProperty({ type: 'integer' }) retry_delay_seconds!: number;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ type: 'string', nullable: true, description: 'Owner: the creating principal' }) user_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) description!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) payload!: JsonObject | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Next cron slot; null while disabled' }) next_run_at!: number | null;
  @ApiProperty({ type: 'string', nullable: true, description: 'Tool that owns the definition; null when managed through this API' })
  managed_by!: string | null;
  @ApiProperty({
    type: 'string',
    nullable: true,
    enum: TARGET_TYPES,
    description: 'Kind of component a run endpoint targets; null for other endpoints',
  })
  target_type!: string | null;
  @ApiProperty({ type: 'string', nullable: true, description: 'Id of the component a run endpoint targets' }) target_id!: string | null;
  @ApiProperty({
    type: 'string',
    nullable: true,
    description:
      "Why the schedule is disabled: the reason given with a PATCH that paused it, or the service's own when it disabled it because of its owner (`owner_revoked:sa:ci`, `owner_lacks_scope:config:read`, `owner_credential_unaccepted:jwt`); null while enabled",
  })
  disabled_reason!: string | null;
  @ApiProperty({ enum: OVERLAP_POLICIES, description: OVERLAP_DESCRIPTION }) overlap_policy!: OverlapPolicy;
  @ApiProperty({ enum: CATCHUP_POLICIES, description: CATCHUP_DESCRIPTION }) catchup_policy!: CatchupPolicy;
  @ApiProperty({ type: 'integer' }) catchup_limit!: number;
  @ApiProperty({ type: 'integer' }) created_at!: number;
  @ApiProperty({ type: 'integer' }) updated_at!: number;
}

export class SchedulePageDto extends PageOf(ScheduleDto) {}

export class ScheduleAttemptDto {
  @ApiProperty({ type: 'integer', description: '1-based' }) attempt!: number;
  @ApiProperty({ type: 'integer' }) started_at!: number;
  @ApiProperty({ type: 'integer' }) completed_at!: number;
  @ApiProperty({ type: 'integer' }) duration_ms!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'HTTP status; null when no response arrived' }) status_code!: number | null;
  @ApiProperty({ type: 'string', nullable: true }) error!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) run_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true, description: 'Final status of the background run this attempt followed' }) run_status!:
    string | null;
}

export class ScheduleRunDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) schedule_id!: string;
  @ApiProperty({ enum: ['cron', 'manual'] }) trigger!: string;
  @ApiProperty({ enum: ['queued', 'running', 'success', 'failed', 'skipped'] }) status!: string;
  @ApiProperty({
    type: 'string',
    nullable: true,
    enum: SKIP_REASONS,
    description: 'Why a policy skipped it: `overlap`, `missed` or `buffer_full`',
  })
  reason!: string | null;
  @ApiProperty({ type: 'integer', description: 'The cron slot, or when the manual trigger was accepted' }) due_at!: number;
  @ApiProperty({ type: 'integer', nullable: true }) started_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true }) completed_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'HTTP status of the last attempt' }) status_code!: number | null;
  @ApiProperty({ type: 'string', nullable: true }) error!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) run_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) run_status!: string | null;
  @ApiProperty({ type: [ScheduleAttemptDto] }) attempts!: ScheduleAttemptDto[];
  @ApiProperty({ type: 'integer' }) created_at!: number;
}

export class ScheduleRunPageDto extends PageOf(ScheduleRunDto) {}

export class ScheduleIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsString()
  @IsUUID('all', { message: 'schedule_id must be a UUID' })
  schedule_id!: string;
}

export class ScheduleRunIdParams extends ScheduleIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsString()
  @IsUUID('all', { message: 'run_id must be a UUID' })
  run_id!: string;
}

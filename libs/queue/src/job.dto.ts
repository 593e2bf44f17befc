import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsObject, IsUUID, ValidateNested } from 'class-validator';

import { COMPONENT_KINDS } from '@app/access';
import { PageOf, PageQuery } from '@app/pagination';
import { BoolField, EPOCH_SECONDS_MAX, IntField, Optional, StringField, UnknownFieldsRejected } from '@app/validation';

import { JOB_STATUSES, JobStatus } from './job-status';

/** The kinds of component a run job belongs to. */

export const JOB_SORT_FIELDS = [
  'created_at',
  'updated_at',
  'completed_at',
  'status',
  'attempt',
  'component_type',
  'component_id',
  'user_id',
] as const;
export type JobSortField = (typeof JOB_SORT_FIELDS)[number];

export class ListJobsQuery extends PageQuery({ maxLimit: 1000, sortFields: JOB_SORT_FIELDS, defaultSort: 'created_at' }) {
  @ApiPropertyOptional({
    type: [String],
    enum: JOB_STATUSES,
    description:
      'Repeatable; repeated values match any. `failed` alone is the dead-letter list; `failed` and `cancelled` the requeueable set.',
  })
  @Optional()
  // One `status=` arrives as a string, several as an array.
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? [value] : value))
  @IsIn(JOB_STATUSES, { each: true, message: `status must be one of ${JOB_STATUSES.join(', ')}` })
  status?: JobStatus[];
}

export class RequeueQuery {
  @BoolField({
    optional: true,
    fromString: true,
    default: false,
    description:
      'true: clear the cancellation (its intent and the recorded cancel) of a cancelled job. Without it, a cancelled job whose cancellation intent is still live is requeued and cancelled again at its first checkpoint',
  })
  clear_cancellation: boolean = false;

  @BoolField({
    optional: true,
    fromString: true,
    default: false,
    description:
      "Required as true to requeue a job that failed within the lock grace (the worker's heartbeat deadline, 60 s by default): its worker may still be running it",
  })
  force: boolean = false;
}

export class JobDto {
  @ApiProperty({ format: 'uuid', description: "Identical to the run's run_id" }) id!: string;
  @ApiProperty({ enum: COMPONENT_KINDS }) component_type!: string;
  @ApiProperty() component_id!: string;
  @ApiProperty() session_id!: string;
  @ApiProperty({ default: 'run' }) job_type!: string;
  @ApiProperty({ type: 'string', nullable: true }) user_id!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true }) payload!: Record<string, unknown>;
  @ApiProperty({ enum: JOB_STATUSES }) status!: JobStatus;
  @ApiProperty({ type: 'integer', description: 'Executions started so far' }) attempt!: number;
  @ApiProperty({ type: 'integer', description: 'Execution budget under any failure mode' }) max_attempts!: number;
  @ApiProperty({ type: 'string', nullable: true }) idempotency_key!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) available_at!: number | null;
  @ApiProperty({ type: 'string', nullable: true }) locked_by!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) locked_at!: number | null;
  @ApiProperty({ type: 'string', nullable: true }) error!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) created_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true }) updated_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true }) completed_at!: number | null;
}

export class JobPageDto extends PageOf(JobDto) {}

export class QueueStatsDto {
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'integer' },
    example: { queued: 3, running: 1, completed: 10, failed: 0, cancelled: 0, paused: 0 },
  })
  counts!: Record<JobStatus, number>;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description:
      'How long the longest-waiting queued job has waited to be claimed, since it became available (enqueued, requeued, or its retry backoff over); null when none waits',
  })
  oldest_queued_age_seconds!: number | null;
}

export const BULK_IDS_MAX = 1000;
export const BULK_LIMIT_MAX = 10_000;
export const BULK_SKIPPED_SHOWN = 100;

/** Which jobs a bulk operation selects; every given condition must hold. At least one is required. */
export class JobFilterDto {
  @ApiPropertyOptional({ type: [String], enum: JOB_STATUSES, description: 'Any of these statuses' })
  @Optional()
  @IsArray()
  @IsIn(JOB_STATUSES, { each: true, message: `status must be one of ${JOB_STATUSES.join(', ')}` })
  status?: JobStatus[];

  @ApiPropertyOptional({ enum: COMPONENT_KINDS })
  @Optional()
  @IsIn(COMPONENT_KINDS, { message: `component_type must be one of ${COMPONENT_KINDS.join(', ')}` })
  component_type?: string;

  @StringField({ optional: true, maxLength: 128 })
  component_id?: string;

  @IntField({ optional: true, min: 0, max: EPOCH_SECONDS_MAX, description: 'Created at or after (epoch seconds)' })
  created_after?: number;

  @IntField({ optional: true, min: 0, max: EPOCH_SECONDS_MAX, description: 'Created before (epoch seconds)' })
  created_before?: number;

  @StringField({ optional: true, minLength: 1, maxLength: 500, description: "The job's last error contains this text (case-insensitive)" })
  error_contains?: string;

  @ApiPropertyOptional({ type: [String], format: 'uuid', maxItems: BULK_IDS_MAX, description: `These jobs (at most ${BULK_IDS_MAX})` })
  @Optional()
  @IsArray()
  @ArrayMaxSize(BULK_IDS_MAX)
  @IsUUID('all', { each: true, message: 'each id must be a UUID' })
  ids?: string[];
}

@UnknownFieldsRejected()
export class BulkJobsDto {
  @ApiProperty({ type: JobFilterDto, description: 'Which jobs (at least one criterion): statuses, component, creation window' })
  @IsObject()
  @ValidateNested()
  @Type(() => JobFilterDto)
  filter!: JobFilterDto;

  @BoolField({
    optional: true,
    default: true,
    description: 'Only count and report what would change (the default): pass false to change jobs',
  })
  dry_run: boolean = true;

  @IntField({
    optional: true,
    min: 1,
    max: BULK_LIMIT_MAX,
    default: 1000,
    description: `Jobs selected at most, oldest first (1 to ${BULK_LIMIT_MAX})`,
  })
  limit: number = 1000;

  @BoolField({ optional: true, default: false, description: 'Requeue: also jobs that failed within the lock grace' })
  force: boolean = false;

  @BoolField({ optional: true, default: false, description: 'Requeue: clear the recorded cancellation of cancelled jobs' })
  clear_cancellation: boolean = false;
}

export class SkippedJobDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({
    example: 'status:running',
    description:
      '`status:<status>` (not in a state the operation applies to), `lock_grace` (failed too recently; pass force) or `moved` (changed meanwhile)',
  })
  reason!: string;
}

export class BulkJobsResultDto {
  @ApiProperty() dry_run!: boolean;
  @ApiProperty({ type: 'integer', description: 'Jobs the filter selected (at most limit)' }) matched!: number;
  @ApiProperty({ type: 'integer', description: 'Jobs changed (a dry run: that would change)' }) changed!: number;
  @ApiProperty({ type: [SkippedJobDto], description: `Selected but left alone, with why (the first ${BULK_SKIPPED_SHOWN})` })
  skipped!: SkippedJobDto[];
}

/** `/queue/jobs/{job_id}`: job ids are the runs' UUIDs; anything else is answered 404 by the path-id handling. */
export class JobIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'job_id must be a UUID' })
  job_id!: string;
}

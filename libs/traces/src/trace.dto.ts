import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsString, IsUUID, Matches } from 'class-validator';

import { COMPONENT_KINDS } from '@app/access';
import { PageOf, PageQuery } from '@app/pagination';
import { EPOCH_SECONDS_MAX, IntField, Optional, StringField } from '@app/validation';

export const TRACE_SORT_FIELDS = ['started_at'] as const;
export type TraceSortField = (typeof TRACE_SORT_FIELDS)[number];
export const TRACE_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;

export class ListTracesQuery extends PageQuery({ maxLimit: 100, sortFields: TRACE_SORT_FIELDS, defaultSort: 'started_at' }) {
  @ApiProperty({ required: false, format: 'uuid', description: 'Only the trace of this run' })
  @Optional()
  @IsUUID('all', { message: 'run_id must be a UUID' })
  run_id?: string;
  @StringField({ optional: true, maxLength: 128, description: 'Only the traces of runs in this session' }) session_id?: string;
  @StringField({ optional: true, maxLength: 128, description: 'Only the traces of runs of this agent, team or workflow' })
  component_id?: string;
  @ApiProperty({ required: false, enum: TRACE_STATUSES, description: 'Only traces whose run has this status' })
  @Optional()
  @IsIn(TRACE_STATUSES)
  status?: string;
  @IntField({
    optional: true,
    fromString: true,
    min: 0,
    max: EPOCH_SECONDS_MAX,
    description: 'Only traces started at or after (epoch seconds)',
  })
  started_after?: number;
  @IntField({ optional: true, fromString: true, min: 0, max: EPOCH_SECONDS_MAX, description: 'Only traces started before (epoch seconds)' })
  started_before?: number;
}

export class SpanDto {
  @ApiProperty({ description: '16 hex digits' }) span_id!: string;
  @ApiProperty({ type: 'string', nullable: true, description: 'The parent span; null for a trace’s first span' }) parent_id!: string | null;
  @ApiProperty({ example: 'run.component' }) name!: string;
  @ApiProperty({ type: 'integer' }) started_at!: number;
  @ApiProperty({ type: 'integer' }) ended_at!: number;
  @ApiProperty({ type: 'integer', description: 'Milliseconds from the trace’s start to this span’s' }) offset_ms!: number;
  @ApiProperty({ type: 'integer' }) duration_ms!: number;
  @ApiProperty({ type: 'object', additionalProperties: true }) attributes!: Record<string, unknown>;
}

export class TraceDto {
  @ApiProperty({ description: 'W3C trace id: 32 hex digits' }) trace_id!: string;
  @ApiProperty({ format: 'uuid' }) run_id!: string;
  @ApiProperty() session_id!: string;
  @ApiProperty({ type: 'string', nullable: true }) user_id!: string | null;
  @ApiProperty({ enum: COMPONENT_KINDS }) component_type!: string;
  @ApiProperty() component_id!: string;
  @ApiProperty({ enum: TRACE_STATUSES }) status!: string;
  @ApiProperty({ type: 'integer' }) started_at!: number;
  @ApiProperty({ type: 'integer', nullable: true }) ended_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true }) duration_ms!: number | null;
  @ApiProperty({ type: [SpanDto], description: 'Oldest first' }) spans!: SpanDto[];
}

export class TracePageDto extends PageOf(TraceDto) {}

export class TraceIdParams {
  @ApiProperty({ description: '32 hex digits' })
  @IsString()
  @Matches(/^[0-9a-f]{32}$/, { message: 'trace_id must be 32 lowercase hex digits' })
  trace_id!: string;
}

import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches } from 'class-validator';

import { PageOf, PageQuery } from '@app/pagination';

import { COMPONENT_KINDS } from './component';
import { RunDto, SESSION_ID } from './run.dto';

export const SESSION_SORT_FIELDS = ['created_at', 'updated_at'] as const;
export type SessionSortField = (typeof SESSION_SORT_FIELDS)[number];
export const SESSION_RUN_SORT_FIELDS = ['created_at'] as const;
export type SessionRunSortField = (typeof SESSION_RUN_SORT_FIELDS)[number];

export class ListSessionsQuery extends PageQuery({ maxLimit: 100, sortFields: SESSION_SORT_FIELDS, defaultSort: 'created_at' }) {}
export class ListSessionRunsQuery extends PageQuery({ maxLimit: 100, sortFields: SESSION_RUN_SORT_FIELDS, defaultSort: 'created_at' }) {}

export class SessionDto {
  @ApiProperty() session_id!: string;
  @ApiProperty({ enum: COMPONENT_KINDS, description: 'Kind of the component of the first run' }) component_type!: string;
  @ApiProperty() component_id!: string;
  @ApiProperty({ type: 'string', nullable: true }) user_id!: string | null;
  @ApiProperty({ type: 'integer' }) created_at!: number;
  @ApiProperty({ type: 'integer' }) updated_at!: number;
}

export class SessionPageDto extends PageOf(SessionDto) {}

export class RunPageDto extends PageOf(RunDto) {}

export class SessionIdParams {
  @ApiProperty()
  @IsString()
  @Matches(SESSION_ID, { message: 'session_id must be 1-128 letters, digits, ., _, : or -' })
  session_id!: string;
}

import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsIn, IsString, IsUUID, MaxLength, MinLength } from 'class-validator';

import { COMPONENT_KINDS } from '@app/access';
import { PageOf, PageQuery } from '@app/pagination';
import { Optional, StringField, UnknownFieldsRejected, UserIdField } from '@app/validation';

export const MEMORY_SORT_FIELDS = ['created_at', 'updated_at'] as const;
export type MemorySortField = (typeof MEMORY_SORT_FIELDS)[number];

/** The kinds of component a memory may name (the run module's agents, teams and workflows). */

export const MEMORY_MAX_LENGTH = 10_000;
export const MAX_TOPICS = 20;
export const TOPIC_MAX_LENGTH = 100;

/** `topics`: at most MAX_TOPICS non-empty strings of at most TOPIC_MAX_LENGTH characters. */
function Topics(): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      type: [String],
      required: false,
      maxItems: MAX_TOPICS,
      description: `At most ${MAX_TOPICS} topics of 1 to ${TOPIC_MAX_LENGTH} characters`,
    }),
    Optional(),
    IsArray(),
    ArrayMaxSize(MAX_TOPICS),
    IsString({ each: true }),
    MinLength(1, { each: true }),
    MaxLength(TOPIC_MAX_LENGTH, { each: true }),
  );
}

/** A misspelt `topics` or `user_id` would keep the memory without them, or for the wrong user: refused instead. */
@UnknownFieldsRejected()
export class CreateMemoryDto {
  @StringField({ minLength: 1, maxLength: MEMORY_MAX_LENGTH, description: 'The fact to keep' }) memory!: string;
  @Topics() topics?: string[];
  @UserIdField({
    nullable: true,
    description:
      'Whose memory: honoured only for the security key, anonymous callers on an open instance and a platform:admin JWT; a service account’s memories are its own (sa:<name>), whatever this says',
  })
  user_id?: string | null;
  @ApiProperty({ enum: COMPONENT_KINDS, required: false, description: 'Kind of the component the memory came from' })
  @Optional()
  @IsIn(COMPONENT_KINDS)
  component_type?: string;
  @StringField({ optional: true, minLength: 1, maxLength: 128, description: 'Id of the component the memory came from' })
  component_id?: string;
}

/** A misspelt field would answer 200 with nothing changed: refused instead. */
@UnknownFieldsRejected()
export class UpdateMemoryDto {
  @StringField({ optional: true, minLength: 1, maxLength: MEMORY_MAX_LENGTH, description: 'The fact, replacing the one kept' })
  memory?: string;
  @Topics() topics?: string[];
}

export class ListMemoriesQuery extends PageQuery({ maxLimit: 100, sortFields: MEMORY_SORT_FIELDS, defaultSort: 'updated_at' }) {
  @StringField({ optional: true, maxLength: 255, description: "Only this user's memories (within what the caller may see)" })
  user_id?: string;
  @StringField({ optional: true, maxLength: 128, description: 'Only memories this component kept' }) component_id?: string;
  @StringField({ optional: true, maxLength: TOPIC_MAX_LENGTH, description: 'Only memories with this topic' }) topic?: string;
  @StringField({ optional: true, maxLength: 200, description: 'Case-insensitive substring of the memory' }) search?: string;
}

export class ListMemoryTopicsQuery {
  @StringField({ optional: true, maxLength: 255, description: "Only this user's topics (within what the caller may see)" })
  user_id?: string;
}

export class MemoryDto {
  @ApiProperty({ format: 'uuid' }) memory_id!: string;
  @ApiProperty() memory!: string;
  @ApiProperty({ type: [String] }) topics!: string[];
  @ApiProperty({ type: 'string', nullable: true }) user_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true, enum: COMPONENT_KINDS }) component_type!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) component_id!: string | null;
  @ApiProperty({ type: 'integer' }) created_at!: number;
  @ApiProperty({ type: 'integer' }) updated_at!: number;
}

export class MemoryPageDto extends PageOf(MemoryDto) {}

export class MemoryIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsString()
  @IsUUID('all', { message: 'memory_id must be a UUID' })
  memory_id!: string;
}

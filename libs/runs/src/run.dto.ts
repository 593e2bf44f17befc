import { ApiProperty } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';

import { BoolField, StringField, UserIdField } from '@app/validation';

import { COMPONENT_KINDS } from './component';
import { RUN_STATUSES } from './run-status';

export const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const IDEMPOTENCY_KEY_MAX = 512;

/**
 * Body of POST /{agents|teams|workflows}/{id}/runs, form-encoded or JSON. The optional text fields' examples
 * are empty so that a generated form (Swagger UI's) leaves them blank, which a form reads as not given.
 */
export class StartRunDto {
  @StringField({ description: 'The input of the run', example: 'Hello!' })
  message!: string;

  @BoolField({ optional: true, fromString: true, default: false, description: 'Answer text/event-stream of run events' })
  stream?: boolean;

  @BoolField({ optional: true, fromString: true, default: false, description: 'Queue the run as a durable job and answer 202 at once' })
  background?: boolean;

  @StringField({
    optional: true,
    maxLength: 128,
    pattern: SESSION_ID,
    patternMessage: 'session_id must be 1-128 letters, digits, ., _, : or -',
    description: 'Session to continue; a new one when absent',
    example: '',
  })
  session_id?: string;

  @UserIdField({
    description: 'User the run is for; ignored for callers with an identity of their own (service accounts, isolated JWT users)',
    example: '',
  })
  user_id?: string;

  @StringField({
    optional: true,
    minLength: 1,
    maxLength: IDEMPOTENCY_KEY_MAX,
    description: 'Dedupe key (the Idempotency-Key header wins when both are sent)',
    example: '',
  })
  idempotency_key?: string;
}

export class RunDto {
  @ApiProperty({ format: 'uuid' }) run_id!: string;
  @ApiProperty() session_id!: string;
  @ApiProperty({ enum: COMPONENT_KINDS }) component_type!: string;
  @ApiProperty() component_id!: string;
  @ApiProperty({ type: 'string', nullable: true }) user_id!: string | null;
  @ApiProperty({ enum: RUN_STATUSES, example: 'completed' }) status!: string;
  @ApiProperty({ description: 'The input message' }) message!: string;
  @ApiProperty({ type: 'string', nullable: true }) content!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) error!: string | null;
  @ApiProperty({ description: 'Queued as a durable job (its id is run_id)' }) background!: boolean;
  @ApiProperty({ type: 'string', nullable: true, description: 'The model a model-backed agent called' }) model!: string | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Prompt tokens the model reported' }) input_tokens!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Completion tokens the model reported' }) output_tokens!: number | null;
  @ApiProperty({ type: 'integer' }) created_at!: number;
  @ApiProperty({ type: 'integer' }) updated_at!: number;
  @ApiProperty({ type: 'integer', nullable: true }) completed_at!: number | null;
}

/** The 202 answer to `background=true`. */
export class AcceptedRunDto {
  @ApiProperty({ format: 'uuid', description: 'Also the id of the queue job' }) run_id!: string;
  @ApiProperty() session_id!: string;
  @ApiProperty({ enum: RUN_STATUSES, example: 'queued' }) status!: string;
}

export class ComponentDto {
  @ApiProperty({ example: 'echo-agent' }) id!: string;
  @ApiProperty({ enum: COMPONENT_KINDS }) type!: string;
  @ApiProperty() name!: string;
  @ApiProperty() description!: string;
}

/** One server-sent event of a streamed run (`event:` is the type, `data:` this object as JSON). */
export interface RunEvent {
  event: 'RunStarted' | 'RunContent' | 'RunCompleted' | 'RunError' | 'RunCancelled';
  data: Record<string, unknown>;
}

/** `.../runs/{run_id}`: run ids are UUIDs; anything else is answered 404 by the path-id handling. */
export class RunIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'run_id must be a UUID' })
  run_id!: string;
}

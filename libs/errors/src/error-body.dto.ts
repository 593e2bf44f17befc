import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** A 500's body, less the error_id each one gets (logged with the stack): every surface words it so. */
export const INTERNAL_ERROR_BODY = { detail: 'Internal server error', error_type: 'internal_error' } as const;

/** The body of a request no route answers. */
export function noRouteDetail(method: string | undefined, path: string): string {
  return `No route for ${method} ${path}`;
}

/** The standard error body (400, 401, 403, 404, 409, 429, 500, 503). */
export class ErrorBodyDto {
  @ApiProperty({ description: 'What went wrong, and what to do about it' })
  detail!: string;

  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'Present when the error carries an id (every 500 does)' })
  error_id?: string | null;

  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'Error category, when present' })
  error_type?: string | null;
}

export class ValidationIssueDto {
  @ApiProperty({
    type: 'array',
    items: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
    description: 'Where the value was: body, query or path, then the field',
    example: ['body', 'name'],
  })
  loc!: (string | number)[];

  @ApiProperty({ example: 'name must be shorter than or equal to 255 characters' })
  msg!: string;

  @ApiProperty({ description: 'The rule it broke', example: 'maxLength' })
  type!: string;

  // Any JSON value: the schema names each type, as an untyped property would be documented as an object.
  @ApiPropertyOptional({
    description: 'The rejected value, of any JSON type (null when none was given)',
    example: 'Nightly report of every agent run, grouped by…',
    oneOf: [
      { type: 'string' },
      { type: 'number' },
      { type: 'boolean' },
      { type: 'array', items: {} },
      { type: 'object', additionalProperties: true },
      { type: 'null' },
    ],
  })
  input?: unknown;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: "The rule's parameters, when it has any", example: {} })
  ctx?: Record<string, unknown>;
}

/** The 422 body: one entry per invalid field. */
export class ValidationErrorBodyDto {
  @ApiProperty({ type: [ValidationIssueDto] })
  detail!: ValidationIssueDto[];
}

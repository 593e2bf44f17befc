import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** The standard error body (400, 401, 403, 404, 409, 429, 500, 503). */
export class ErrorBodyDto {
  @ApiProperty({ example: 'Service account not found' })
  detail!: string;

  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'Present when the error carries an id (every 500 does)' })
  error_id?: string | null;

  @ApiPropertyOptional({ type: 'string', nullable: true, description: 'Error category, when present' })
  error_type?: string | null;
}

export class ValidationIssueDto {
  @ApiProperty({ type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'integer' }] }, example: ['body', 'expires_in_days'] })
  loc!: (string | number)[];

  @ApiProperty({ example: 'expires_in_days must not be greater than 3650' })
  msg!: string;

  @ApiProperty({ example: 'max' })
  type!: string;

  @ApiPropertyOptional({ description: 'The rejected value' })
  input?: unknown;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  ctx?: Record<string, unknown>;
}

/** The 422 body: one entry per invalid field. */
export class ValidationErrorBodyDto {
  @ApiProperty({ type: [ValidationIssueDto] })
  detail!: ValidationIssueDto[];
}

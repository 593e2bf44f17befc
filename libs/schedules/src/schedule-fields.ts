import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsObject, IsString, MaxLength, ValidateBy } from 'class-validator';

import { IntField, Optional, StringField } from '@app/validation';

import { cronProblem, isTimeZone } from './cron';

/** Methods a schedule may call with; anything else has no business on the service's own API. */
export const SCHEDULE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/**
 * A name is at most 255 characters. Any text is a name (punctuation, brackets, non-ASCII) except
 * control characters (C0, DEL, C1: NUL cannot be stored and the others only hide in listings and logs).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is what this pattern is for
const NAME = /^[^\u0000-\u001F\u007F-\u009F]*$/;
/** A path on this service: starts with `/`, printable ASCII, no spaces (the base URL is always PUBLIC_URL). */
const ENDPOINT = /^\/[!-~]*$/;
const MANAGER = /^[a-z0-9][a-z0-9._-]*$/;

interface Presence {
  optional?: boolean;
}

export function ScheduleName({ optional }: Presence = {}): PropertyDecorator {
  return StringField({
    optional,
    minLength: 1,
    maxLength: 255,
    pattern: NAME,
    patternMessage: 'name must not contain control characters',
    description: 'Unique per owner, 1 to 255 characters, no control characters',
    example: 'nightly-report',
  });
}

export function ScheduleEndpoint({ optional }: Presence = {}): PropertyDecorator {
  return StringField({
    optional,
    maxLength: 512,
    pattern: ENDPOINT,
    patternMessage: 'endpoint must be a path on this service starting with "/", without spaces',
    description:
      "Path of this service's own route to call, max 512 characters; not under /schedules, not /mcp, A2A HTTP+JSON, minting or rotating a token (a fire cannot use them)",
    example: '/agents/echo-agent/runs',
  });
}

export function ScheduleMethod({ optional }: Presence = {}): PropertyDecorator {
  return applyDecorators(
    ...(optional ? [Optional()] : []),
    // Only an allowed verb is upper-cased: a refused one is echoed in the 422 as it was sent.
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'string' && (SCHEDULE_METHODS as readonly string[]).includes(value.toUpperCase()) ? value.toUpperCase() : value,
    ),
    IsString(),
    MaxLength(10),
    IsIn(SCHEDULE_METHODS, { message: `method must be one of ${SCHEDULE_METHODS.join(', ')}` }),
    ApiPropertyOptional({ enum: SCHEDULE_METHODS, default: 'POST', maxLength: 10, description: 'Case-insensitive; stored upper-case' }),
  );
}

/** Five-field cron (or a nickname such as `@daily`) that fires at least once more. */
export function CronExpression({ optional }: Presence = {}): PropertyDecorator {
  return applyDecorators(
    ...(optional ? [Optional()] : []),
    IsString(),
    MaxLength(128),
    ValidateBy({
      name: 'isCronExpression',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && cronProblem(value) === null,
        defaultMessage: (args) => (typeof args?.value === 'string' ? (cronProblem(args.value) ?? '') : 'cron_expr must be a string'),
      },
    }),
    (optional ? ApiPropertyOptional : ApiProperty)({
      maxLength: 128,
      example: '0 9 * * MON-FRI',
      description: 'minute hour day-of-month month day-of-week, or @hourly/@daily/...',
    }),
  );
}

export function TimeZone({ optional }: Presence = {}): PropertyDecorator {
  return applyDecorators(
    ...(optional ? [Optional()] : []),
    IsString(),
    MaxLength(64),
    ValidateBy({
      name: 'isTimeZone',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && isTimeZone(value),
        defaultMessage: () => 'timezone must be an IANA time zone name such as Europe/Berlin or UTC',
      },
    }),
    ApiPropertyOptional({
      maxLength: 64,
      default: 'UTC',
      example: 'Europe/Berlin',
      description: 'IANA time zone the cron expression is read in (its DST changes included)',
    }),
  );
}

export function Description(): PropertyDecorator {
  return StringField({ optional: true, nullable: true, maxLength: 1024, description: 'Free text, max 1024 characters' });
}

export function Payload(): PropertyDecorator {
  return applyDecorators(
    Optional({ nullable: true }),
    IsObject({ message: 'payload must be a JSON object' }),
    ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, description: 'JSON body sent to the endpoint' }),
  );
}

export const TimeoutSeconds = (): PropertyDecorator =>
  IntField({ optional: true, min: 1, max: 86400, default: 3600, description: 'Per attempt, including following a background run' });
export const MaxRetries = (): PropertyDecorator =>
  IntField({ optional: true, min: 0, max: 10, default: 0, description: 'Attempts after the first' });
export const RetryDelaySeconds = (): PropertyDecorator =>
  IntField({ optional: true, min: 1, max: 3600, default: 60, description: 'Wait before each retry' });

export function ManagedBy(): PropertyDecorator {
  return StringField({
    optional: true,
    nullable: true,
    maxLength: 64,
    pattern: MANAGER,
    patternMessage: 'managed_by must be a lowercase slug',
    description: 'The tool that owns this definition (e.g. `terraform`); null when managed through this API. Set on create only.',
  });
}

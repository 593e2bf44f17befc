import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { plainToInstance, Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsString, IsUUID, ValidateNested } from 'class-validator';

import { DEFAULT_SCOPES, SERVICE_ACCOUNT_NAME } from '@app/access';
import { PageOf, PageQuery } from '@app/pagination';
import { BoolField, EmptyBodyAllowed, IntField, Optional, StringField, UnknownFieldsRejected } from '@app/validation';

import { SERVICE_ACCOUNT_SORT_FIELDS } from './service-account.repository';

export const DEFAULT_EXPIRY_DAYS = 90;
export const MAX_EXPIRY_DAYS = 3650;
export const DEFAULT_GRACE_SECONDS = 3600;
export const MAX_GRACE_SECONDS = 86_400;

export class ScopeGrantDto {
  // No length limit here: a string too long to be a scope is an invalid scope (400), as every other is.
  @ApiProperty({ description: '`<resource>:<action>`, `<resource>:<id>:<action>` or `platform:admin`', example: 'agents:run' })
  @IsString()
  scope!: string;

  @ApiPropertyOptional({ enum: ['allow'], default: 'allow', description: 'Token scopes are grants: only `allow` is accepted' })
  @Optional()
  @IsIn(['allow'])
  effect = 'allow' as const;
}

/** `"agents:run"` is shorthand for `{"scope": "agents:run"}`: responses list scopes as strings, so requests may too. */
function toScopeGrants({ value }: { value: unknown }): unknown {
  if (!Array.isArray(value)) {
    return value;
  }
  return value.map((grant: unknown) =>
    typeof grant === 'string'
      ? plainToInstance(ScopeGrantDto, { scope: grant })
      : Array.isArray(grant)
        ? // ValidateNested would walk into a nested list and find nothing wrong with an empty one; null it refuses.
          null
        : isObject(grant)
          ? plainToInstance(ScopeGrantDto, grant)
          : grant,
  );
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

@ApiExtraModels(ScopeGrantDto)
@UnknownFieldsRejected()
export class CreateServiceAccountDto {
  @StringField({
    maxLength: 63,
    pattern: SERVICE_ACCOUNT_NAME,
    patternMessage: 'name must be a lowercase slug: a-z, 0-9, - and _, starting with a letter or digit',
    description: 'Lowercase slug, max 63 characters',
    example: 'ci-runner',
  })
  name!: string;

  @ApiPropertyOptional({
    type: 'array',
    items: { oneOf: [{ type: 'string', example: 'agents:run' }, { $ref: getSchemaPath(ScopeGrantDto) }] },
    nullable: true,
    description: `Scope strings, or \`{scope, effect}\` objects. Default (absent or null): ${DEFAULT_SCOPES.join(', ')}`,
    example: ['agents:run', 'sessions:read'],
  })
  // class-validator checks a property's rules from the bottom up, and the 422 names the first broken: a string
  // must read "must be an array", not "no more than 100 elements".
  @Optional({ nullable: true })
  @ValidateNested({ each: true, message: 'each scope must be a scope string or a {scope, effect} object' })
  @ArrayMaxSize(100)
  @IsArray({ message: 'scopes must be an array of scope strings or {scope, effect} objects' })
  @Transform(toScopeGrants)
  scopes?: ScopeGrantDto[] | null;

  @BoolField({
    optional: true,
    default: false,
    description: 'Must be true when any privileged scope (write, delete, admin, service_accounts) is granted',
  })
  allow_privileged_scopes?: boolean;

  @IntField({
    optional: true,
    nullable: true,
    min: 1,
    max: MAX_EXPIRY_DAYS,
    default: DEFAULT_EXPIRY_DAYS,
    description: "Lifetime in days (1 to 3650). A token minted by a service account's token expires no later than that token",
  })
  expires_in_days?: number | null;

  @BoolField({
    optional: true,
    default: false,
    description: "A token without expiry (one minted by a service account's token expires with that token); overrides expires_in_days",
  })
  never_expires?: boolean;
}

/** A misspelt `grace_seconds` would otherwise rotate with the default hour of grace where the caller meant another. */
@EmptyBodyAllowed()
@UnknownFieldsRejected()
export class RotateServiceAccountDto {
  @IntField({
    optional: true,
    min: 0,
    max: MAX_GRACE_SECONDS,
    default: DEFAULT_GRACE_SECONDS,
    description: 'How long the replaced token keeps working, in seconds (0 to 86400; 0 ends it at once)',
  })
  grace_seconds?: number;
}

export class ListServiceAccountsQuery extends PageQuery({
  maxLimit: 100,
  sortFields: SERVICE_ACCOUNT_SORT_FIELDS,
  defaultSort: 'created_at',
}) {
  @BoolField({ optional: true, fromString: true, default: true, description: 'Include revoked accounts' })
  include_revoked: boolean = true;
}

export class ServiceAccountDto {
  @ApiProperty() id!: string;
  @ApiProperty({ example: 'ci-runner' }) name!: string;
  @ApiProperty({ example: 'sa:ci-runner' }) principal!: string;
  @ApiProperty({ example: 'svc_pat_AbC1234', description: 'Display prefix; never the full token' }) token_prefix!: string;
  @ApiProperty({ type: [String], example: DEFAULT_SCOPES }) scopes!: string[];
  @ApiProperty({ type: 'string', nullable: true, description: 'Principal that minted the account; null for the OS security key' })
  created_by!: string | null;
  @ApiProperty({ type: 'integer' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true }) expires_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true }) last_used_at!: number | null;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: '203.0.113.7',
    description: 'Client address of the last successful use; null until used',
  })
  last_used_ip!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) revoked_at!: number | null;
}

export class CreatedServiceAccountDto extends ServiceAccountDto {
  @ApiProperty({ description: 'Plaintext `svc_pat_` token: shown in this response (mint or rotate) only, never again' })
  token!: string;
}

export class ServiceAccountPageDto extends PageOf(ServiceAccountDto) {}

export class ServiceAccountIdParams {
  @ApiProperty({ format: 'uuid' })
  @IsString()
  @IsUUID('all', { message: 'id must be a UUID' })
  id!: string;
}

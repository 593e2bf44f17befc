import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, DECORATORS } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateIf } from 'class-validator';

interface FieldOptions {
  description?: string;
  optional?: boolean;
  /** With optional: explicit null passes validation, so a PATCH can tell "absent" from "null". */
  nullable?: boolean;
  example?: unknown;
  default?: unknown;
}

function documented(type: unknown, options: FieldOptions, extra: Record<string, unknown> = {}): PropertyDecorator {
  const doc = {
    type,
    description: options.description,
    example: options.example,
    default: options.default,
    nullable: options.nullable,
    ...extra,
  };
  return options.optional ? ApiPropertyOptional(doc as never) : ApiProperty(doc as never);
}

/** `@IsOptional` that lets null through only when asked to. */
export function Optional({ nullable = false }: { nullable?: boolean } = {}): PropertyDecorator {
  return nullable ? IsOptional() : ValidateIf((_object, value) => value !== undefined);
}

function optionality(options: FieldOptions): PropertyDecorator[] {
  return options.optional ? [Optional({ nullable: options.nullable })] : [];
}

/** Query strings arrive as text: turn decimal digits into a number, leave anything else for validation to reject. */
const queryNumber = Transform(({ value }: { value: unknown }) =>
  typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value,
);

/** A Map, not an object: `?enabled=constructor` must not find an Object property. */
const BOOLEAN_WORDS = new Map<string, boolean>([
  ['true', true],
  ['1', true],
  ['yes', true],
  ['on', true],
  ['false', false],
  ['0', false],
  ['no', false],
  ['off', false],
]);

/** Query strings arrive as text: map the usual words to booleans, leave anything else for validation to reject. */
const queryBoolean = Transform(({ value }: { value: unknown }) =>
  typeof value === 'string' ? (BOOLEAN_WORDS.get(value.toLowerCase()) ?? value) : value,
);

/** The last second PostgreSQL's timestamps and ISO dates share (9999-12-31T23:59:59Z): a time filter past it is a 422, not a database error. */
export const EPOCH_SECONDS_MAX = 253_402_300_799;

export interface IntFieldOptions extends FieldOptions {
  min?: number;
  max?: number;
  /** The value arrives as a query or path string. */
  fromString?: boolean;
}

export function IntField(options: IntFieldOptions = {}): PropertyDecorator {
  const bounds = [...(options.min === undefined ? [] : [Min(options.min)]), ...(options.max === undefined ? [] : [Max(options.max)])];
  return applyDecorators(
    ...optionality(options),
    ...(options.fromString ? [queryNumber] : []),
    IsInt(),
    ...bounds,
    documented('integer', options, { minimum: options.min, maximum: options.max }),
  );
}

export interface StringFieldOptions extends FieldOptions {
  minLength?: number;
  maxLength?: number;
  pattern?: RegExp;
  patternMessage?: string;
}

export function StringField(options: StringFieldOptions = {}): PropertyDecorator {
  return applyDecorators(
    ...optionality(options),
    IsString(),
    ...(options.minLength === undefined ? [] : [MinLength(options.minLength)]),
    ...(options.maxLength === undefined ? [] : [MaxLength(options.maxLength)]),
    ...(options.pattern ? [Matches(options.pattern, { message: options.patternMessage })] : []),
    documented(String, options, { minLength: options.minLength, maxLength: options.maxLength, pattern: options.pattern?.source }),
  );
}

/**
 * Whom a created run, schedule or memory is for (`user_id`): 1-255 characters, as the user columns hold. Whether
 * it is honoured is the attribution rule's to say (attributedUser), not the field's.
 */
export function UserIdField(options: Pick<FieldOptions, 'description' | 'nullable' | 'example'>): PropertyDecorator {
  return StringField({ optional: true, minLength: 1, maxLength: 255, ...options });
}

export function BoolField(options: FieldOptions & { fromString?: boolean } = {}): PropertyDecorator {
  return applyDecorators(...optionality(options), ...(options.fromString ? [queryBoolean] : []), IsBoolean(), documented(Boolean, options));
}

const EMPTY_BODY_ALLOWED = 'validation:empty-body-allowed';

/** The properties a DTO documents (its @ApiProperty names), as OpenAPI and the tool schemas list them. */
export function documentedNames(dto: { prototype: object }): string[] {
  const keys = (Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, dto.prototype) as string[] | undefined) ?? [];
  return keys.map((key) => key.slice(1));
}

/**
 * For a PATCH body that shares its fields with create: an absent field stays as it is, so no field may state a
 * default in OpenAPI or in a tool's schema (both read this metadata), or a client that fills in defaults would
 * reset what it never meant to touch. The metadata is redefined on this class only, so create keeps its defaults.
 */
export function NoDefaults(): ClassDecorator {
  return (target) => {
    for (const name of documentedNames(target)) {
      const property = Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, target.prototype, name) as Record<string, unknown> | undefined;
      if (property && 'default' in property) {
        const { default: _omitted, ...rest } = property;
        Reflect.defineMetadata(DECORATORS.API_MODEL_PROPERTIES, rest, target.prototype, name);
      }
    }
  };
}

/** On a body DTO whose fields all have defaults: a request with no body at all validates as `{}`. */
export function EmptyBodyAllowed(): ClassDecorator {
  return (target) => Reflect.defineMetadata(EMPTY_BODY_ALLOWED, true, target);
}

export function allowsEmptyBody(type: unknown): boolean {
  return typeof type === 'function' && Reflect.getMetadata(EMPTY_BODY_ALLOWED, type) === true;
}

const UNKNOWN_FIELDS_REJECTED = 'validation:unknown-fields-rejected';

/**
 * On a body DTO where an ignored field would widen what the request does (a misspelt filter criterion selects
 * more jobs, a misspelt `scopes` mints the default ones), or would leave in force what the caller meant to change
 * (a schedule's misspelt `cron` keeps firing at the old times): a field it does not declare, here or in the
 * objects nested in it, is a 422 instead of being dropped.
 */
export function UnknownFieldsRejected(): ClassDecorator {
  return (target) => Reflect.defineMetadata(UNKNOWN_FIELDS_REJECTED, true, target);
}

export function rejectsUnknownFields(type: unknown): boolean {
  return typeof type === 'function' && Reflect.getMetadata(UNKNOWN_FIELDS_REJECTED, type) === true;
}

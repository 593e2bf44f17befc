import { Injectable, Paramtype, Type } from '@nestjs/common';
import { DECORATORS } from '@nestjs/swagger';
import { z } from 'zod';

import { MAX_PAGE, PageQueryOptions } from '@app/pagination';
import { documentedNames } from '@app/validation';

import { RequestValidationPipe } from '../errors/validation.pipe';

/** Tool arguments are not path segments: an id a tool cannot use stays a 422 naming the argument. */
class ToolArgumentsPipe extends RequestValidationPipe {
  protected override readonly pathIdsAsNotFound = false;
}

/**
 * Tool arguments become the mirrored route's DTO through the same validation pipe as REST, so a
 * tool accepts exactly what its route accepts (bounds, defaults) and refuses with the same issues.
 */
@Injectable()
export class McpArguments {
  private readonly pipe = new ToolArgumentsPipe();

  async as<T>(dto: Type<T>, args: Record<string, unknown>, location: Paramtype = 'query'): Promise<T> {
    return (await this.pipe.transform(args, { type: location, metatype: dto })) as T;
  }
}

/**
 * The tool-schema side of a route's PageQuery: the same bounds, sort fields and defaults as REST.
 * Bounds are described, not enforced here: the route's DTO refuses with REST's issues.
 */
export function pageArguments(query: { pageOptions: Required<PageQueryOptions<string>> }) {
  const { maxLimit, defaultLimit, sortFields, defaultSort } = query.pageOptions;
  return {
    limit: z
      .number()
      .meta({ type: 'integer', minimum: 1, maximum: maxLimit, default: defaultLimit })
      .optional()
      .describe(`Page size, 1 to ${maxLimit} (default ${defaultLimit})`),
    page: z.number().meta({ type: 'integer', minimum: 1, maximum: MAX_PAGE }).optional().describe('Page number, 1 or more'),
    sort_by: z
      .string()
      .optional()
      .describe(`${sortFields.join(', ')} (default ${defaultSort}); unknown fields are ignored`),
    sort_order: z.enum(['asc', 'desc']).optional().describe('Default desc'),
  };
}

/** What @ApiProperty records for one DTO property; the validation decorators of libs/validation write both from one set of options. */
interface DocumentedProperty {
  type?: unknown;
  isArray?: boolean;
  items?: DocumentedProperty;
  required?: boolean;
  nullable?: boolean;
  [keyword: string]: unknown;
}

/** The JSON Schema keywords a tool schema repeats from the DTO: a value's bounds, format, choices and default; a list's length. */
const VALUE_KEYWORDS = ['enum', 'default', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'format'];
const LIST_KEYWORDS = ['minItems', 'maxItems'];

function stated(property: DocumentedProperty, keywords: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keywords.filter((keyword) => property[keyword] !== undefined).map((keyword) => [keyword, property[keyword]]));
}

/** One value of the property's type: the type is checked by the SDK, everything else only stated. */
function valueOf(type: unknown, property: DocumentedProperty): z.ZodType {
  if (type === 'array' && property.items) {
    return z.array(argumentOf(property.items));
  }
  if (type === 'integer' || type === 'number' || type === Number) {
    return z.number();
  }
  if (type === 'string' || type === String) {
    return z.string();
  }
  if (type === 'boolean' || type === Boolean) {
    return z.boolean();
  }
  if (type === 'object') {
    return z.record(z.string(), z.unknown());
  }
  if (typeof type === 'function' && documentedNames(type as Type).length > 0) {
    return z.object(dtoArguments(type as Type));
  }
  throw new Error(`No tool argument type for the documented type ${String(type)}`);
}

function argumentOf(property: DocumentedProperty): z.ZodType {
  // Whole numbers are stated, and checked by the DTO like the bounds: zod's int() would add ±2^53 bounds the DTO does not have.
  const value = { ...(property.type === 'integer' ? { type: 'integer' } : {}), ...stated(property, VALUE_KEYWORDS) };
  const described = stated(property, ['description', ...LIST_KEYWORDS]);
  let schema =
    property.isArray && property.type !== 'array'
      ? z.array(valueOf(property.type, property).meta(value)).meta(described)
      : valueOf(property.type, property).meta({ ...value, ...described });
  if (property.nullable) {
    // Said on the whole argument too: a nullable one is an anyOf, whose branches a client may not read.
    schema = described.description ? schema.nullable().describe(String(described.description)) : schema.nullable();
  }
  return property.required === false ? schema.optional() : schema;
}

/**
 * The tool-schema side of a DTO: one argument per documented property, its type, bounds, choices and
 * default read from the DTO's OpenAPI metadata, which the same decorators that validate it write. So a
 * tool's schema states exactly what its route's DTO enforces, with no bound repeated by hand. As in
 * pageArguments, only types are checked here: the DTO refuses everything else with REST's issues.
 */
export function dtoArguments(dto: Type, omit: readonly string[] = []): z.ZodRawShape {
  return Object.fromEntries(
    documentedNames(dto)
      .filter((name) => !omit.includes(name))
      .map((name) => [name, argumentOf(Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, dto.prototype, name) as DocumentedProperty)]),
  );
}

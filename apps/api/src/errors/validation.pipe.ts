import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';

import { RequestErrorCode, RequestException, ValidationFailedException, ValidationIssue } from '@app/errors';
import { allowsEmptyBody } from '@app/validation';

const LOCATIONS: Record<string, string> = { body: 'body', query: 'query', param: 'path' };

class RawValidationErrors extends Error {
  constructor(readonly errors: ValidationError[]) {
    super('validation failed');
  }
}

function segment(property: string): string | number {
  return /^\d+$/.test(property) ? Number(property) : property;
}

/** Flattens class-validator's tree into the spec's `{loc, msg, type, input, ctx}` entries. */
export function toIssues(errors: ValidationError[], loc: (string | number)[]): ValidationIssue[] {
  return errors.flatMap((error) => {
    const here = [...loc, segment(error.property)];
    const constraints = Object.entries(error.constraints ?? {});
    const own: ValidationIssue[] =
      error.value === undefined && constraints.length > 0
        ? [{ loc: here, msg: 'Field required', type: 'missing', input: null, ctx: {} }]
        : constraints.map(([type, msg]) => ({ loc: here, msg, type, input: error.value ?? null, ctx: error.contexts?.[type] ?? {} }));
    return [...own, ...toIssues(error.children ?? [], here)];
  });
}

/** PostgreSQL text cannot hold U+0000: a string carrying it is refused before it reaches a query. */
const NUL = '\u0000';

/** Where in a body or query value a string (or an object key) holds NUL, as `loc` segments; null if nowhere. */
export function findNul(value: unknown, loc: (string | number)[] = [], depth = 0): { loc: (string | number)[]; input: unknown } | null {
  if (typeof value === 'string') {
    return value.includes(NUL) ? { loc, input: value } : null;
  }
  if (typeof value !== 'object' || value === null || depth > 64) {
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    const here = [...loc, segment(key)];
    if (key.includes(NUL)) {
      return { loc: here, input: key };
    }
    const found = findNul(item, here, depth + 1);
    if (found) {
      return found;
    }
  }
  return null;
}

/** A path value for a 404's detail: short, and quoted as JSON so control characters stay visible. */
function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}...` : text);
}

/**
 * The global validation pipe: transforms and validates body, query and path
 * through their DTOs and reports failures as the spec's 422 body, with `loc`
 * naming where the bad value came from.
 */
@Injectable()
export class RequestValidationPipe extends ValidationPipe {
  /**
   * Path ids: a value that fails its parameter's rules (or holds NUL) cannot name anything, so the
   * answer is the spec's 404, here for every `{id}` route rather than per route. MCP tool
   * arguments are not paths and keep the 422 (see McpArguments).
   */
  protected readonly pathIdsAsNotFound: boolean = true;

  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidUnknownValues: false,
      exceptionFactory: (errors) => new RawValidationErrors(errors),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const location = LOCATIONS[metadata.type] ?? metadata.type;
    const pathAsNotFound = metadata.type === 'param' && this.pathIdsAsNotFound;
    if (metadata.type === 'body' || metadata.type === 'query' || metadata.type === 'param') {
      const nul = findNul(value, metadata.data ? [metadata.data] : []);
      if (nul && pathAsNotFound) {
        throw new RequestException(RequestErrorCode.NotFound, `Not found: ${nul.loc.join('.') || 'path'} ${shown(nul.input)} names nothing`);
      }
      if (nul) {
        throw new ValidationFailedException([
          { loc: [location, ...nul.loc], msg: 'String must not contain NUL (\\u0000) characters', type: 'no_nul', input: nul.input, ctx: {} },
        ]);
      }
    }
    if (metadata.type === 'body' && value === undefined && allowsEmptyBody(metadata.metatype)) {
      value = {};
    }
    if (metadata.type === 'body' && this.expectsObject(metadata) && (typeof value !== 'object' || value === null || Array.isArray(value))) {
      throw new ValidationFailedException([
        { loc: [location], msg: 'Input should be a JSON object', type: 'model_type', input: value ?? null, ctx: {} },
      ]);
    }
    try {
      return await super.transform(value ?? {}, metadata);
    } catch (error) {
      if (error instanceof RawValidationErrors && pathAsNotFound) {
        const first = error.errors[0];
        throw new RequestException(RequestErrorCode.NotFound, `Not found: ${first.property} ${shown(first.value)} names nothing`);
      }
      if (error instanceof RawValidationErrors) {
        throw new ValidationFailedException(toIssues(error.errors, [location]));
      }
      throw error;
    }
  }

  private expectsObject(metadata: ArgumentMetadata): boolean {
    return typeof metadata.metatype === 'function' && this.toValidate(metadata);
  }
}

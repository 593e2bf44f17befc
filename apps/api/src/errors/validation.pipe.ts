import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { ValidatorOptions } from 'class-validator';

import { RequestErrorCode, RequestException, ValidationFailedException, ValidationIssue } from '@app/errors';
import { allowsEmptyBody, rejectsUnknownFields, UNSTORABLE, Unstorable, unstorable } from '@app/validation';

const LOCATIONS: Record<string, string> = { body: 'body', query: 'query', param: 'path' };

class RawValidationErrors extends Error {
  constructor(readonly errors: ValidationError[]) {
    super('validation failed');
  }
}

function segment(property: string): string | number {
  return /^\d+$/.test(property) ? Number(property) : property;
}

/** Flattens class-validator's tree into the 422 body's `{loc, msg, type, input, ctx}` entries. */
function toIssues(errors: ValidationError[], loc: (string | number)[]): ValidationIssue[] {
  return errors.flatMap((error) => {
    const here = [...loc, segment(error.property)];
    const constraints = Object.entries(error.constraints ?? {}).map(([type, msg]): [string, string] =>
      // class-validator's wording for a field a DTO that rejects unknown fields does not declare.
      type === 'whitelistValidation'
        ? ['extra_forbidden', `Unknown field '${error.property}': it is not one this request takes`]
        : [type, msg],
    );
    const own: ValidationIssue[] =
      error.value === undefined && constraints.length > 0
        ? [{ loc: here, msg: 'Field required', type: 'missing', input: null, ctx: {} }]
        : constraints.map(([type, msg]) => ({ loc: here, msg, type, input: error.value ?? null, ctx: error.contexts?.[type] ?? {} }));
    return [...own, ...toIssues(error.children ?? [], here)];
  });
}

/**
 * Deepest nesting a body or query value may have. Transforming a value recurses through it, so a
 * 3,000-level payload overflowed the stack (a 500); no DTO or payload the service takes comes near.
 */
const MAX_NESTING = 32;

interface InputProblem {
  loc: (string | number)[];
  input: unknown;
  kind: Unstorable | 'depth';
}

/**
 * The first place in a body, query or path value where a string (or an object key) holds what PostgreSQL
 * cannot store, or nesting goes deeper than MAX_NESTING, as `loc` segments below the value; null if none.
 */
function findInputProblem(value: unknown, loc: (string | number)[] = [], depth = 0): InputProblem | null {
  if (typeof value === 'string') {
    const kind = unstorable(value);
    return kind ? { loc, input: value, kind } : null;
  }
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  if (depth >= MAX_NESTING) {
    return { loc, input: null, kind: 'depth' };
  }
  for (const [key, item] of Object.entries(value)) {
    const here = [...loc, segment(key)];
    const kind = unstorable(key);
    if (kind) {
      return { loc: here, input: key, kind };
    }
    const found = findInputProblem(item, here, depth + 1);
    if (found) {
      return found;
    }
  }
  return null;
}

const PROBLEM_ISSUES = {
  nul: { msg: `String must not contain ${UNSTORABLE.nul}`, type: 'no_nul', ctx: {} },
  surrogate: { msg: `String must not contain ${UNSTORABLE.surrogate}`, type: 'no_unpaired_surrogate', ctx: {} },
  depth: { msg: `Value is nested deeper than ${MAX_NESTING} levels`, type: 'max_depth', ctx: { max_depth: MAX_NESTING } },
} as const;

/** A path value for a 404's detail: short, and quoted as JSON so control characters stay visible. */
function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}...` : text);
}

/**
 * The global validation pipe: transforms and validates body, query and path
 * through their DTOs and reports failures as the standard 422 body, with `loc`
 * naming where the bad value came from.
 */
@Injectable()
export class RequestValidationPipe extends ValidationPipe {
  /**
   * Path ids: a value that fails its parameter's rules (or holds what PostgreSQL cannot store) cannot name anything, so the
   * answer is a 404, here for every `{id}` route rather than per route. MCP tool
   * arguments are not paths and keep the 422 (see McpArguments).
   */
  protected readonly pathIdsAsNotFound: boolean = true;

  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidUnknownValues: false,
      // One entry per field: `limit=abc` is "must be an integer", not also "must not be less than 1" and "greater than 100".
      stopAtFirstError: true,
      exceptionFactory: (errors) => new RawValidationErrors(errors),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const location = LOCATIONS[metadata.type] ?? metadata.type;
    const pathAsNotFound = metadata.type === 'param' && this.pathIdsAsNotFound;
    if (metadata.type === 'body' || metadata.type === 'query' || metadata.type === 'param') {
      const problem = findInputProblem(value, metadata.data ? [metadata.data] : []);
      if (problem && pathAsNotFound) {
        throw new RequestException(
          RequestErrorCode.NotFound,
          `Not found: ${problem.loc.join('.') || 'path'} ${shown(problem.input)} names nothing`,
        );
      }
      if (problem) {
        throw new ValidationFailedException([{ loc: [location, ...problem.loc], input: problem.input, ...PROBLEM_ISSUES[problem.kind] }]);
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

  protected override validate(object: object, options?: ValidatorOptions): ReturnType<ValidationPipe['validate']> {
    return super.validate(object, rejectsUnknownFields(object.constructor) ? { ...options, forbidNonWhitelisted: true } : options);
  }

  private expectsObject(metadata: ArgumentMetadata): boolean {
    return typeof metadata.metatype === 'function' && this.toValidate(metadata);
  }
}

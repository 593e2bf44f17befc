import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';

import { ValidationFailedException, ValidationIssue } from '@app/errors';
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

/**
 * The global validation pipe: transforms and validates body, query and path
 * through their DTOs and reports failures as the spec's 422 body, with `loc`
 * naming where the bad value came from.
 */
@Injectable()
export class RequestValidationPipe extends ValidationPipe {
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

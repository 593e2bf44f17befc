import { Injectable, Paramtype, Type } from '@nestjs/common';
import { z } from 'zod';

import { PageQueryOptions } from '@app/pagination';

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
    limit: z.number().int().min(1).optional().describe(`Page size, 1 to ${maxLimit} (default ${defaultLimit})`),
    page: z.number().int().min(1).optional().describe('Page number, 1 or more'),
    sort_by: z
      .string()
      .optional()
      .describe(`${sortFields.join(', ')} (default ${defaultSort}); unknown fields are ignored`),
    sort_order: z.enum(['asc', 'desc']).optional().describe('Default desc'),
  };
}

import type { Type } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn } from 'class-validator';
import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';

import { IntField, Optional } from '@app/validation';

export type SortOrder = 'asc' | 'desc';

export class PageMeta {
  @ApiProperty({ type: 'integer' }) page!: number;
  @ApiProperty({ type: 'integer' }) limit!: number;
  @ApiProperty({ type: 'integer' }) total_pages!: number;
  @ApiProperty({ type: 'integer' }) total_count!: number;
  @ApiProperty({ type: 'integer' }) search_time_ms!: number;
}

export interface Page<T> {
  data: T[];
  meta: PageMeta;
}

/**
 * The one page shape of every list route, for the OpenAPI document: `{data: [item], meta}`.
 * `export class JobPageDto extends PageOf(JobDto) {}` keeps a named schema per resource.
 */
export function PageOf<T>(item: Type<T>): Type<Page<T>> {
  class PageOfItem implements Page<T> {
    @ApiProperty({ type: [item] }) data!: T[];
    @ApiProperty({ type: PageMeta }) meta!: PageMeta;
  }
  return PageOfItem;
}

export interface PageRequest<SortField extends string> {
  page: number;
  limit: number;
  sortBy: SortField;
  sortOrder: SortOrder;
  offset: number;
}

export interface PageQueryOptions<SortField extends string> {
  maxLimit: number;
  defaultLimit?: number;
  sortFields: readonly SortField[];
  defaultSort: SortField;
}

export interface PageQueryShape {
  limit: number;
  page: number;
  sort_by?: string;
  sort_order: SortOrder;
}

/**
 * Any page is valid (the spec's "1 or more"; an empty one past the end) up to the largest integer a JSON number
 * holds exactly, so that `meta.page` answers the page asked for; beyond, a 422 naming the field.
 */
export const MAX_PAGE = Number.MAX_SAFE_INTEGER;

/** Rows skipped at most: far past the end of any table, and a number PostgreSQL's OFFSET takes as it is. */
const MAX_OFFSET = Number.MAX_SAFE_INTEGER;

/**
 * Builds the list-query DTO every paginated route shares: `limit`, `page`,
 * `sort_by` (unknown fields are ignored, not rejected) and `sort_order`.
 */
export function PageQuery<SortField extends string>(options: PageQueryOptions<SortField>) {
  const defaultLimit = options.defaultLimit ?? 20;
  class PageQueryDto implements PageQueryShape {
    /** The options this query was built with, for other surfaces (MCP tool schemas) to describe the same bounds. */
    static readonly pageOptions: Required<PageQueryOptions<SortField>> = { ...options, defaultLimit };

    @IntField({
      optional: true,
      fromString: true,
      min: 1,
      max: options.maxLimit,
      default: defaultLimit,
      description: `Page size, 1 to ${options.maxLimit}`,
    })
    limit: number = defaultLimit;

    @IntField({ optional: true, fromString: true, min: 1, max: MAX_PAGE, default: 1, description: 'Page number, 1 or more' })
    page: number = 1;

    @ApiProperty({
      required: false,
      default: options.defaultSort,
      description: `Sort field: ${options.sortFields.join(', ')}; unknown fields are ignored`,
    })
    @Optional()
    sort_by?: string;

    @ApiProperty({ required: false, enum: ['asc', 'desc'], default: 'desc' })
    @Optional()
    @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
    @IsIn(['asc', 'desc'])
    sort_order: SortOrder = 'desc';

    toPageRequest(): PageRequest<SortField> {
      const sortBy = options.sortFields.find((field) => field === this.sort_by) ?? options.defaultSort;
      return {
        page: this.page,
        limit: this.limit,
        sortBy,
        sortOrder: this.sort_order,
        offset: Math.min((this.page - 1) * this.limit, MAX_OFFSET),
      };
    }
  }
  return PageQueryDto;
}

/** Wraps one page of rows with the list's `meta`. */
export function toPage<T>(request: { page: number; limit: number }, rows: T[], totalCount: number, startedAt: number): Page<T> {
  return {
    data: rows,
    meta: {
      page: request.page,
      limit: request.limit,
      total_pages: Math.ceil(totalCount / request.limit),
      total_count: totalCount,
      search_time_ms: Math.round(performance.now() - startedAt),
    },
  };
}

/**
 * One page of `query`'s rows and the total count, ordered by `sortColumn` in the request's order
 * with `idColumn` as the tie-breaker, so pages never overlap. NULLs sort as PostgreSQL sorts them
 * (last ascending, first descending) unless `nullsLast` keeps them last both ways.
 */
export function fetchPage<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  request: PageRequest<string>,
  columns: { sort: string; id: string; nullsLast?: boolean },
): Promise<[T[], number]> {
  const ascending = request.sortOrder === 'asc';
  return query
    .orderBy(columns.sort, ascending ? 'ASC' : 'DESC', ascending || columns.nullsLast ? 'NULLS LAST' : 'NULLS FIRST')
    .addOrderBy(columns.id, 'ASC')
    .skip(request.offset)
    .take(request.limit)
    .getManyAndCount();
}

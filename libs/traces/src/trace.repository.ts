import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';

import { DataScope } from '@app/access';
import { fetchPage, PageRequest } from '@app/pagination';

import { requestSpanOf, StoredRequestSpan } from './request-span';
import { TracedRun } from './run-span';
import { TraceSortField } from './trace.dto';
import { StoredSpan, TraceEntity } from './trace.entity';

/** A traced run's row, as its spans are read back. */
type TracedRunRow = TracedRun & { trace_id: string; request_span: string | null; spans: string[] | null };

export interface TraceFilters {
  runId?: string;
  sessionId?: string;
  componentId?: string;
  status?: string;
  /** Epoch seconds. */
  startedAfter?: number;
  startedBefore?: number;
}

const FILTERS: { [K in keyof TraceFilters]-?: string } = {
  runId: 'trace.run_id = :runId',
  sessionId: 'trace.session_id = :sessionId',
  componentId: 'trace.component_id = :componentId',
  status: 'trace.status = :status',
  startedAfter: 'trace.started_at >= to_timestamp(:startedAfter)',
  startedBefore: 'trace.started_at < to_timestamp(:startedBefore)',
};

/** Every read of traces takes the caller's DataScope first; runOwners serves the filter that keeps other users' spans out of a trace. */
@Injectable()
export class TraceRepository {
  constructor(
    @InjectRepository(TraceEntity) private readonly traces: Repository<TraceEntity>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** The trace as the caller sees it: the summary of its first run in the caller's scope (several runs can share a trace id). */
  findById(scope: DataScope, traceId: string): Promise<TraceEntity | null> {
    const owner = scope.where('trace.user_id');
    return this.traces
      .createQueryBuilder('trace')
      .where(owner.sql, owner.params)
      .andWhere('trace.trace_id = :traceId', { traceId })
      .orderBy('trace.started_at')
      .addOrderBy('trace.run_id')
      .limit(1)
      .getOne();
  }

  page(scope: DataScope, filters: TraceFilters, request: PageRequest<TraceSortField>): Promise<[TraceEntity[], number]> {
    const owner = scope.where('trace.user_id');
    const query = this.traces.createQueryBuilder('trace').where(owner.sql, owner.params);
    for (const [key, condition] of Object.entries(FILTERS) as [keyof TraceFilters, string][]) {
      if (filters[key] !== undefined) {
        query.andWhere(condition, { [key]: filters[key] });
      }
    }
    return fetchPage(query, request, { sort: 'trace.started_at', id: 'trace.run_id' });
  }

  /** Who each of these runs belongs to (its attributed user, null for an operator's own); unknown ids are left out. */
  async runOwners(runIds: string[]): Promise<Map<string, string | null>> {
    const rows: { id: string; user_id: string | null }[] =
      runIds.length === 0 ? [] : await this.dataSource.query(`SELECT id, user_id FROM runs WHERE id = ANY ($1::uuid[])`, [runIds]);
    return new Map(rows.map((row) => [row.id, row.user_id]));
  }

  /**
   * The spans of these traces, by trace id: what their runs' rows keep (each run's request span and its own
   * spans), and the span batches of trace_spans (spans stored before runs kept theirs).
   */
  async spansOf(traceIds: string[]): Promise<Map<string, StoredSpan[]>> {
    const spans = new Map(traceIds.map((id): [string, StoredSpan[]] => [id, []]));
    if (traceIds.length > 0) {
      const [runs, batches]: [TracedRunRow[], { trace_id: string; spans: string }[]] = await Promise.all([
        this.dataSource.query(
          `SELECT trace_id, request_span, spans, id, session_id AS "sessionId", user_id AS "userId",
                  component_type AS "componentType", component_id AS "componentId", background, status
             FROM runs WHERE trace_id = ANY ($1) AND (request_span IS NOT NULL OR spans IS NOT NULL)`,
          [traceIds],
        ),
        this.dataSource.query(`SELECT trace_id, spans FROM trace_spans WHERE trace_id = ANY ($1)`, [traceIds]),
      ]);
      for (const run of runs) {
        const ofTrace = spans.get(run.trace_id)!;
        if (run.request_span !== null) {
          ofTrace.push(requestSpanOf(JSON.parse(run.request_span) as StoredRequestSpan, run));
        }
        run.spans?.forEach((execution) => ofTrace.push(...(JSON.parse(execution) as StoredSpan[])));
      }
      batches.forEach((batch) => spans.get(batch.trace_id)!.push(...(JSON.parse(batch.spans) as StoredSpan[])));
    }
    return spans;
  }
}

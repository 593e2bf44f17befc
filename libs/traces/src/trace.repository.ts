import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';

import { DataScope } from '@app/access';
import { fetchPage, PageRequest } from '@app/pagination';

import { TraceSortField } from './trace.dto';
import { TraceEntity } from './trace.entity';
import { TraceSpanEntity } from './trace-span.entity';

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

/** Every read takes the caller's DataScope first. */
@Injectable()
export class TraceRepository {
  constructor(
    @InjectRepository(TraceEntity) private readonly traces: Repository<TraceEntity>,
    @InjectRepository(TraceSpanEntity) private readonly spans: Repository<TraceSpanEntity>,
  ) {}

  async findById(scope: DataScope, traceId: string): Promise<TraceEntity | null> {
    const found = await this.traces.findOneBy({ traceId });
    return found && scope.includes(found.userId) ? found : null;
  }

  page(scope: DataScope, filters: TraceFilters, request: PageRequest<TraceSortField>): Promise<[TraceEntity[], number]> {
    const owner = scope.where('trace.user_id');
    const query = this.traces.createQueryBuilder('trace').where(owner.sql, owner.params);
    for (const [key, condition] of Object.entries(FILTERS) as [keyof TraceFilters, string][]) {
      if (filters[key] !== undefined) {
        query.andWhere(condition, { [key]: filters[key] });
      }
    }
    return fetchPage(query, request, { sort: 'trace.started_at', id: 'trace.trace_id' });
  }

  /** The spans of these traces, oldest first. */
  spansOf(traceIds: string[]): Promise<TraceSpanEntity[]> {
    return traceIds.length === 0 ? Promise.resolve([]) : this.spans.find({ where: { traceId: In(traceIds) }, order: { startedAt: 'ASC' } });
  }
}

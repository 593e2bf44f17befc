import { Injectable } from '@nestjs/common';
import { isUUID } from 'class-validator';

import { DataScope, Principal } from '@app/access';
import { toEpoch } from '@app/database';
import { Page, toPage } from '@app/pagination';

import { RUN_ATTRIBUTES, SPAN } from './run-span';
import { ListTracesQuery, SpanDto, TraceDto } from './trace.dto';
import { StoredSpan, TraceEntity } from './trace.entity';
import { TraceRepository } from './trace.repository';
import { TraceErrorCode, TraceException } from './traces.exception';

/** Trace reads, self-scoped like every read. */
@Injectable()
export class TracesService {
  constructor(private readonly traces: TraceRepository) {}

  async list(caller: Principal, query: ListTracesQuery): Promise<Page<TraceDto>> {
    const startedAt = performance.now();
    const request = query.toPageRequest();
    const [rows, total] = await this.traces.page(
      DataScope.of(caller),
      {
        runId: query.run_id,
        sessionId: query.session_id,
        componentId: query.component_id,
        status: query.status,
        startedAfter: query.started_after,
        startedBefore: query.started_before,
      },
      request,
    );
    return toPage(request, await this.withSpans(rows, 'run'), total, startedAt);
  }

  async get(caller: Principal, traceId: string): Promise<TraceDto> {
    const found = await this.traces.findById(DataScope.of(caller), traceId);
    if (!found) {
      throw new TraceException(TraceErrorCode.NotFound, `Trace '${traceId}' not found`);
    }
    const [dto] = await this.withSpans([found], 'owner');
    return dto;
  }

  /**
   * Each trace with its spans. Listed, a row is one run's trace and carries that run's spans only (runs
   * sharing a trace id each have a row). Read by id, the trace carries the spans of every run its user
   * has under that id. Either way other users' runs stay out: a caller's traceparent is taken as given,
   * so someone who learns a trace id can run under it.
   */
  private async withSpans(rows: TraceEntity[], of: 'run' | 'owner'): Promise<TraceDto[]> {
    const spans = await this.traces.spansOf(rows.map((row) => row.traceId));
    const runsOf = new Map(rows.map((row) => [row.traceId, spanRuns(spans.get(row.traceId)!)]));
    // Listed, a span's run is compared with the row's; only a read by id needs the owners of the runs.
    const owners = of === 'owner' ? await this.traces.runOwners(runsIn(runsOf)) : new Map<string, string | null>();
    return rows.map((row) => {
      const runs = runsOf.get(row.traceId)!;
      const shown = spans.get(row.traceId)!.filter((span) => {
        const runId = runs.get(span.span_id);
        // An unknown run has no owner (undefined), so it matches no trace's user (a string or null).
        return runId !== undefined && (of === 'run' ? runId === row.runId : owners.get(runId) === row.userId);
      });
      return toTraceDto(row, shown);
    });
  }
}

/** Every run any of these traces' spans belongs to, once. */
function runsIn(runsOf: Map<string, Map<string, string>>): string[] {
  return [...new Set([...runsOf.values()].flatMap((runs) => [...runs.values()]))];
}

/**
 * The run each span belongs to: the `run.id` it names (every span a run records names it). A span that
 * names none (stored by an earlier version) takes its nearest ancestor's, except a request span: one
 * that made no run (refused, or a replayed idempotency key) belongs to none, whatever parent its caller
 * gave it. Spans of no run are left out.
 */
function spanRuns(spans: StoredSpan[]): Map<string, string> {
  const byId = new Map(spans.map((span) => [span.span_id, span]));
  const runOf = (span: StoredSpan): string | undefined => {
    const runId = span.attributes[RUN_ATTRIBUTES.runId];
    return typeof runId === 'string' && isUUID(runId) ? runId : undefined;
  };
  const runs = new Map<string, string>();
  for (const span of spans) {
    let runId = runOf(span);
    if (runId === undefined && span.name !== SPAN.request) {
      const seen = new Set<string>();
      for (let parent = byId.get(span.parent_id ?? ''); parent && runId === undefined && !seen.has(parent.span_id);) {
        seen.add(parent.span_id);
        runId = runOf(parent);
        parent = byId.get(parent.parent_id ?? '');
      }
    }
    if (runId !== undefined) {
      runs.set(span.span_id, runId);
    }
  }
  return runs;
}

function toTraceDto(row: TraceEntity, spans: StoredSpan[]): TraceDto {
  const start = row.startedAt.getTime();
  return {
    trace_id: row.traceId,
    run_id: row.runId,
    session_id: row.sessionId,
    user_id: row.userId,
    component_type: row.componentType,
    component_id: row.componentId,
    status: row.status,
    started_at: toEpoch(row.startedAt),
    ended_at: toEpoch(row.endedAt),
    duration_ms: row.endedAt ? row.endedAt.getTime() - start : null,
    spans: inOrder(spans).map((span): SpanDto => ({
      span_id: span.span_id,
      parent_id: span.parent_id,
      name: span.name,
      started_at: Math.floor(span.started_at / 1000),
      ended_at: Math.floor(span.ended_at / 1000),
      offset_ms: Math.round(span.started_at - start),
      duration_ms: Math.round(span.ended_at - span.started_at),
      attributes: span.attributes,
    })),
  };
}

/** Oldest first; a parent before the child it started within the same millisecond (clocks of two processes meet here). */
function inOrder(spans: StoredSpan[]): StoredSpan[] {
  const parents = new Map(spans.map((span) => [span.span_id, span.parent_id]));
  const depth = (span: StoredSpan): number => {
    let levels = 0;
    for (let parent = span.parent_id; parent && parents.has(parent) && levels < spans.length; parent = parents.get(parent) ?? null) {
      levels += 1;
    }
    return levels;
  };
  const millis = (span: StoredSpan) => Math.floor(span.started_at);
  return [...spans].sort((a, b) => millis(a) - millis(b) || depth(a) - depth(b));
}

import { setTimeout as sleep } from 'node:timers/promises';

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { isUUID } from 'class-validator';
import { DataSource } from 'typeorm';

import { assertMayChange, attributedUser, DataScope, forComponent, mayUse, Principal } from '@app/access';
import { Env } from '@app/config';
import { isDatabaseUnavailable, isUniqueViolation, timeOrderedId, toEpoch } from '@app/database';
import { ValidationFailedException } from '@app/errors';
import { CancellationIntents, JobPayload, JobProducer, TERMINAL_STATUSES } from '@app/queue';
import { RequestSpan, RunTrace, Tracing } from '@app/traces';
import { unstorable } from '@app/validation';

import { Component, ComponentKind } from './component';
import { ComponentRegistry } from './component.registry';
import { AcceptedRunDto, ComponentDto, IDEMPOTENCY_KEY_MAX, RunDto, RunEvent, StartRunDto } from './run.dto';
import { RunEntity } from './run.entity';
import { toRunDto } from './run.mapper';
import { RUN_IDEMPOTENCY_CONSTRAINT, RunOutcome, RunRepository } from './run.repository';
import { RunExecutor, RunInput } from './run-executor';
import { RunErrorCode, RunException } from './runs.exception';
import { SyncRunLeases } from './sync-run-leases';

/** Where a run request came from: the body plus the Idempotency-Key and W3C traceparent headers, if any. */
export interface RunRequest extends StartRunDto {
  idempotencyKeyHeader?: string;
  /** The caller's trace context: the run's trace continues it. */
  traceparent?: string;
  /** The id the client gave its message, when its protocol has one (A2A's messageId). */
  messageId?: string;
}

/** How often a run executed here asks again to store its outcome while the database is away (see finished). */
const OUTCOME_RETRY_MS = 1000;

interface Created {
  run: RunEntity;
  /** False when an idempotency key matched an earlier run, which is `run`. */
  created: boolean;
}

/**
 * The run domain's API, called by the REST controllers and the MCP tools alike. Every method
 * takes the caller's principal: attribution and self-scoping are decided here and nowhere else.
 */
@Injectable()
export class RunsService {
  constructor(
    private readonly env: Env,
    private readonly registry: ComponentRegistry,
    private readonly runs: RunRepository,
    private readonly producer: JobProducer,
    private readonly intents: CancellationIntents,
    private readonly executor: RunExecutor,
    private readonly tracing: Tracing,
    private readonly leases: SyncRunLeases,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** The components of a kind `caller` may use under `scope` (`agents:read`, `agents:run`), narrowed to each component as the guard narrows it. */
  componentsFor(caller: Principal, kind: ComponentKind, scope: string): ComponentDto[] {
    return this.registry
      .list(kind)
      .filter((component) => mayUse(caller, forComponent(scope, component.id)))
      .map(toComponentDto);
  }

  getComponent(kind: ComponentKind, id: string): ComponentDto {
    return toComponentDto(this.registry.get(kind, id));
  }

  /** Runs to the end in this process and returns the finished run (or the earlier run of a repeated idempotency key). */
  run(caller: Principal, kind: ComponentKind, componentId: string, request: RunRequest): Promise<RunDto> {
    return this.traced(request, async (span) => {
      const component = this.registry.get(kind, componentId);
      const { run, created } = await this.create(caller, component, request, false, span);
      if (!created) {
        return this.get(caller, kind, componentId, run.id);
      }
      return this.leases.holding(run.id, async (stop) =>
        this.finished(
          run,
          await this.executor.execute(component, toInput(run, request), { trace: this.traceOf(span), signal: () => stop }),
          span,
          stop,
        ),
      );
    });
  }

  /** Like run(), reporting progress as events: RunStarted, RunContent*, then RunCompleted, RunError or RunCancelled. */
  async stream(
    caller: Principal,
    kind: ComponentKind,
    componentId: string,
    request: RunRequest,
    send: (event: RunEvent) => void,
  ): Promise<void> {
    return this.traced(request, (span) => this.streamTraced(caller, kind, componentId, request, send, span));
  }

  private async streamTraced(
    caller: Principal,
    kind: ComponentKind,
    componentId: string,
    request: RunRequest,
    send: (event: RunEvent) => void,
    span: RequestSpan | undefined,
  ): Promise<void> {
    const component = this.registry.get(kind, componentId);
    const { run, created } = await this.create(caller, component, request, false, span);
    send({
      event: 'RunStarted',
      data: {
        run_id: run.id,
        session_id: run.sessionId,
        component_type: kind,
        component_id: componentId,
        created_at: toEpoch(run.createdAt),
      },
    });
    if (!created) {
      send(finalEvent(await this.get(caller, kind, componentId, run.id)));
      return;
    }
    const finished = await this.leases.holding(run.id, async (stop) => {
      const outcome = await this.executor.execute(component, toInput(run, request), {
        onDelta: (content) => send({ event: 'RunContent', data: { run_id: run.id, content } }),
        trace: this.traceOf(span),
        signal: () => stop,
      });
      return this.finished(run, outcome, span, stop);
    });
    send(finalEvent(finished));
  }

  /** Stores the run and its durable job (same id) in one transaction; a worker runs it. */
  enqueue(caller: Principal, kind: ComponentKind, componentId: string, request: RunRequest): Promise<AcceptedRunDto> {
    return this.traced(request, (span) => this.enqueueTraced(caller, kind, componentId, request, span));
  }

  private async enqueueTraced(
    caller: Principal,
    kind: ComponentKind,
    componentId: string,
    request: RunRequest,
    span: RequestSpan | undefined,
  ): Promise<AcceptedRunDto> {
    if (!this.env.QUEUE_ENABLED) {
      throw new RunException(
        RunErrorCode.QueueDisabled,
        'Background runs need the durable job queue, which is not enabled on this replica',
      );
    }
    const component = this.registry.get(kind, componentId);
    const { run, created } = await this.create(caller, component, request, true, span);
    if (created) {
      // Just committed as queued: answered as such even if a worker, woken by NOTIFY, has already claimed it.
      return { run_id: run.id, session_id: run.sessionId, status: 'queued' };
    }
    // A repeated idempotency key: the earlier run as it stands now.
    const stored = await this.get(caller, kind, componentId, run.id);
    return { run_id: stored.run_id, session_id: stored.session_id, status: stored.status };
  }

  async get(caller: Principal, kind: ComponentKind, componentId: string, runId: string): Promise<RunDto> {
    // Run ids are UUIDs: anything else cannot name a run (and must not reach a uuid column). A component
    // id holding NUL names no component either (REST refuses it as a path id; MCP arguments reach here).
    const run =
      isUUID(runId) && !unstorable(componentId) ? await this.runs.findById(DataScope.of(caller), runId, { kind, id: componentId }) : null;
    if (!run) {
      throw runNotFound(runId);
    }
    return toRunDto(run);
  }

  /** The id the client gave the message of a run the caller has read (A2A's messageId); null when it gave none. */
  messageIdOf(run: RunDto): Promise<string | null> {
    return this.runs.messageIdOf(run.run_id);
  }

  /** A run of the caller's, whatever its component: for callers that know only its id (the WebSocket's watch and cancel). */
  async locate(caller: Principal, runId: string): Promise<RunDto> {
    const run = isUUID(runId) ? await this.runs.findById(DataScope.of(caller), runId) : null;
    if (!run) {
      throw runNotFound(runId);
    }
    return toRunDto(run);
  }

  /**
   * Records a cancellation intent. A queued run is cancelled at once; a running one stops at
   * its next checkpoint. A finished run is returned unchanged.
   */
  async cancel(caller: Principal, kind: ComponentKind, componentId: string, runId: string): Promise<RunDto> {
    const current = await this.get(caller, kind, componentId, runId);
    assertMayChange(caller, current.user_id, `Run '${runId}'`, 'cancel');
    if (TERMINAL_STATUSES.includes(current.status as never)) {
      return current;
    }
    await this.dataSource.transaction(async (manager) => {
      if (!current.background) {
        await this.intents.record(manager, runId, caller.userId);
      } else if (await this.producer.cancel(manager, runId, caller.userId)) {
        await manager.update(RunEntity, { id: runId }, { status: 'cancelled', completedAt: () => 'now()', updatedAt: () => 'now()' });
      }
    });
    return this.get(caller, kind, componentId, runId);
  }

  /**
   * The request's span around `work` (none while tracing is off): a child of the caller's traceparent
   * when one came with the request. It is stored with the run it makes, if any.
   */
  private async traced<T>(request: RunRequest, work: (span: RequestSpan | undefined) => Promise<T>): Promise<T> {
    const span = this.tracing.startRequest(request.traceparent);
    try {
      return await work(span);
    } catch (error) {
      span?.fail(error);
      throw error;
    } finally {
      span?.end();
    }
  }

  /**
   * The trace of a run executed here: its request span's. A run without one (tracing off, or a caller's
   * trace that is not sampled) records no spans, here or, since its job carries no traceparent, on a worker.
   */
  private traceOf(span: RequestSpan | undefined): RunTrace {
    return this.tracing.runTrace(span?.traceparent);
  }

  private async create(
    caller: Principal,
    component: Component,
    request: RunRequest,
    background: boolean,
    span: RequestSpan | undefined,
  ): Promise<Created> {
    if (request.stream && request.background) {
      throw new RunException(
        RunErrorCode.InvalidRequest,
        'stream=true cannot be combined with background=true: poll GET .../runs/{run_id} instead',
      );
    }
    const userId = attributedUser(caller, request.user_id);
    const key = idempotencyKey(request);
    const run = newRun(component, request, userId, key, background, span);
    const newSession = request.session_id === undefined;
    try {
      if (background) {
        // The request span ends as the job is enqueued, where its queue wait starts, and is stored with the run.
        const stored = span?.stored();
        // One round trip, no lookup first: a run not written repeats a key (its earlier run answers) or names another user's session.
        if (!(await this.runs.insertBackground(run, jobPayload(run, newSession, span?.traceparent, stored?.ended_at), stored))) {
          return (await this.earlierUnder(userId, key, component)) ?? this.sessionNotFound(run);
        }
        return this.createdIn(span, run);
      }
      const earlier = await this.earlierUnder(userId, key, component);
      if (earlier) {
        return earlier;
      }
      if (!(await this.runs.insertStarted(run, newSession))) {
        this.sessionNotFound(run);
      }
    } catch (error) {
      if (key !== null && isUniqueViolation(error, RUN_IDEMPOTENCY_CONSTRAINT)) {
        // A concurrent request with the same key won the race: answer with its run.
        return (await this.earlierUnder(userId, key, component))!;
      }
      throw error;
    }
    return this.createdIn(span, run);
  }

  /** The run an earlier request made under this idempotency key, if any, answered in place of a new one. */
  private async earlierUnder(userId: string | null, key: string | null, component: Component): Promise<Created | null> {
    if (key === null) {
      return null;
    }
    const earlier = await this.runs.findByIdempotencyKey(userId, key);
    return earlier && { run: this.sameComponent(earlier, component, key), created: false };
  }

  private sessionNotFound(run: RunEntity): never {
    throw new RunException(RunErrorCode.SessionNotFound, `Session '${run.sessionId}' not found`);
  }

  /** A new run: its request span names it (set only once the run exists: a span naming none is stored nowhere). */
  private createdIn(span: RequestSpan | undefined, run: RunEntity): Created {
    span?.describe(run);
    return { run, created: true };
  }

  /**
   * Records the outcome of a run executed here, with its request span, and answers the run as stored, without reading
   * it back. The work is done and its caller waits for it, so a database that is away is asked again, every second
   * for up to the lock grace (the run's lease renewed meanwhile, as a worker keeps a job's outcome), unless the api
   * stops (`stop`): failing the call would leave the run to be swept as lost and its caller to run it again.
   */
  private async finished(run: RunEntity, outcome: RunOutcome, span: RequestSpan | undefined, stop: AbortSignal): Promise<RunDto> {
    span?.describe({ ...run, status: outcome.status });
    const giveUpAt = Date.now() + this.env.QUEUE_LOCK_GRACE_SECONDS * 1000;
    let stored: RunEntity | null;
    for (;;) {
      try {
        stored = await this.runs.finish(run, outcome, span?.stored());
        break;
      } catch (error) {
        if (!isDatabaseUnavailable(error) || stop.aborted || Date.now() >= giveUpAt) {
          throw error;
        }
        await sleep(OUTCOME_RETRY_MS, undefined, { signal: stop }).catch(() => undefined);
      }
    }
    if (!stored) {
      throw runNotFound(run.id);
    }
    return toRunDto(stored);
  }

  private sameComponent(run: RunEntity, component: Component, key: string): RunEntity {
    if (run.componentType !== component.kind || run.componentId !== component.id) {
      throw new RunException(
        RunErrorCode.IdempotencyKeyReused,
        `Idempotency key '${key}' was already used for ${run.componentType} '${run.componentId}'`,
      );
    }
    return run;
  }
}

/** Quotes the id only when it could name a run: callers past REST (A2A, MCP) may send anything, of any length. */
function runNotFound(runId: string): RunException {
  return new RunException(RunErrorCode.RunNotFound, isUUID(runId) ? `Run '${runId}' not found` : 'Run not found: run ids are UUIDs');
}

/** The header wins over the body field (an empty header is none); over-long keys are a 422 naming where they came from. */
function idempotencyKey(request: RunRequest): string | null {
  const key = request.idempotencyKeyHeader || (request.idempotency_key ?? null);
  if (request.idempotencyKeyHeader !== undefined && request.idempotencyKeyHeader.length > IDEMPOTENCY_KEY_MAX) {
    throw new ValidationFailedException([
      {
        loc: ['header', 'idempotency-key'],
        msg: `Idempotency-Key must be at most ${IDEMPOTENCY_KEY_MAX} characters`,
        type: 'maxLength',
        input: `${request.idempotencyKeyHeader.slice(0, 32)}...`,
        ctx: { max_length: IDEMPOTENCY_KEY_MAX },
      },
    ]);
  }
  // Node refuses NUL in a header before it gets here; the other control characters are refused as a body field's would be.
  if (request.idempotencyKeyHeader !== undefined && CONTROL.test(request.idempotencyKeyHeader)) {
    throw new ValidationFailedException([
      {
        loc: ['header', 'idempotency-key'],
        msg: 'Idempotency-Key must not contain control characters',
        type: 'pattern',
        input: request.idempotencyKeyHeader.slice(0, 32),
        ctx: {},
      },
    ]);
  }
  return key === '' ? null : key;
}

// eslint-disable-next-line no-control-regex -- matching control characters is what this pattern is for
const CONTROL = /[\u0000-\u001F\u007F]/;

/** A new run, stamped with its request's start when traced (its trace starts there too). */
function newRun(
  component: Component,
  request: RunRequest,
  userId: string | null,
  key: string | null,
  background: boolean,
  span: RequestSpan | undefined,
): RunEntity {
  const now = span?.startTime ?? new Date();
  return Object.assign(new RunEntity(), {
    id: timeOrderedId(),
    sessionId: request.session_id ?? timeOrderedId(),
    componentType: component.kind,
    componentId: component.id,
    userId,
    background,
    status: background ? 'queued' : 'running',
    message: request.message,
    content: null,
    error: null,
    idempotencyKey: key,
    createdAt: now,
    updatedAt: now,
    completedAt: null,
    traceId: span?.traceId ?? null,
    messageId: request.messageId ?? null,
  });
}

/**
 * What the worker needs besides the job's columns. A run that opened its session has no history: the worker skips reading it.
 * A traced run carries its request span's traceparent and when it was enqueued (the request span's end, stored already):
 * the worker's spans continue that trace.
 */
function jobPayload(run: RunEntity, newSession: boolean, traceparent: string | undefined, enqueuedAt: number | undefined): JobPayload {
  return {
    message: run.message,
    ...(newSession ? {} : { continues_session: true }),
    ...(traceparent === undefined ? {} : { traceparent }),
    // Epoch milliseconds, whole: the payload is shown to operators beside epoch seconds, so the name says the unit.
    ...(enqueuedAt === undefined ? {} : { enqueued_at_ms: Math.round(enqueuedAt) }),
  };
}

function toInput(run: RunEntity, request: RunRequest): RunInput {
  return {
    id: run.id,
    sessionId: run.sessionId,
    userId: run.userId,
    message: run.message,
    continuesSession: request.session_id !== undefined,
  };
}

/** The event that ends a run's stream: RunCompleted, RunCancelled or RunError, carrying the finished run. */
export function finalEvent(run: RunDto): RunEvent {
  const event = run.status === 'completed' ? 'RunCompleted' : run.status === 'cancelled' ? 'RunCancelled' : 'RunError';
  return { event, data: { ...run } };
}

function toComponentDto(component: Component): ComponentDto {
  return { id: component.id, type: component.kind, name: component.name, description: component.description ?? '' };
}

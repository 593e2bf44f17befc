import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { ClientBase } from 'pg';
import { DataSource, IsNull, Repository, SelectQueryBuilder } from 'typeorm';

import { DataScope } from '@app/access';
import { CONNECTION_WAIT_MS, queryPrepared, WriteBatcher, WriteBatcherOptions } from '@app/database';
import { fetchPage, PageRequest } from '@app/pagination';
import { enqueueWith, ExpiredJob, JobPayload, JobStatus, QueueJobEntity } from '@app/queue';
import type { StoredRequestSpan, StoredSpan } from '@app/traces';

import { ComponentKind, ModelUsage, Turn } from './component';
import { RunEntity } from './run.entity';
import { RunStatus } from './run-status';
import { SessionRunSortField } from './session.dto';

export const RUN_IDEMPOTENCY_CONSTRAINT = 'UQ_runs_idempotency';

export interface RunOutcome {
  status: RunStatus;
  content: string | null;
  error: string | null;
  /** What the run's model calls consumed, when a component reported it. */
  usage?: ModelUsage | null;
  /** The spans this execution recorded (none when untraced), stored with the outcome. */
  spans?: StoredSpan[];
}

/** An execution's spans as the run's row keeps them: a JSON array, appended to those of earlier attempts. */
const storedSpans = (outcome: RunOutcome): string | null => (outcome.spans?.length ? JSON.stringify(outcome.spans) : null);

const BACKGROUND_JOB = enqueueWith('run JOIN input USING (id)', {
  componentType: 'input.component_type',
  componentId: 'input.component_id',
  sessionId: 'input.session_id',
  userId: 'input.user_id',
  payload: 'input.payload',
  idempotencyKey: 'input.idempotency_key',
});

/** The session of a run that opens it. */
const NEW_SESSION = `INSERT INTO sessions (id, component_type, component_id, user_id) VALUES ($2, $3, $4, $5) RETURNING id`;

/** A session that exists already is marked used when it is the same user's, else left alone (no row returned: no run). */
const ON_JOINED_SESSION = 'ON CONFLICT (id) DO UPDATE SET updated_at = now() WHERE sessions.user_id IS NOT DISTINCT FROM EXCLUDED.user_id';

/** A session the run continues: created when the id is new, marked used when it is the same user's, else nothing (no row). */
const JOINED_SESSION = `INSERT INTO sessions (id, component_type, component_id, user_id) VALUES ($2, $3, $4, $5) ${ON_JOINED_SESSION} RETURNING id`;

/**
 * Background runs in one statement, one row of input each (no two naming one session: see
 * BACKGROUND_BATCHES): their sessions (new, or an existing one of the same user, marked used; a run
 * naming another user's gets none, so no run), the runs (with their trace ids and request spans when
 * traced, stamped with their requests' starts), their jobs, and the wake-up of idle workers. A row whose
 * idempotency key its user has used already (a client's retry) is left out before anything is written,
 * rather than failing the statement for the rows beside it. Sessions are taken in id order, so two
 * statements naming the same ones wait for each other rather than deadlock. Answers the ids of the runs
 * it created. Prepared by name: each connection plans it once.
 */
const BACKGROUND_RUNS = {
  name: 'runs_background',
  text: `
  WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::varchar[], $3::varchar[], $4::varchar[], $5::varchar[], $6::text[], $7::varchar[],
                         $8::timestamptz[], $9::varchar[], $10::text[], $11::text[], $12::varchar[])
      AS input(id, session_id, component_type, component_id, user_id, message, idempotency_key,
               created_at, trace_id, payload, request_span, message_id)
  ),
  fresh AS (
    SELECT * FROM input
     WHERE input.idempotency_key IS NULL
        OR NOT EXISTS (SELECT FROM runs
                        WHERE runs.idempotency_key = input.idempotency_key
                          -- Not IS NOT DISTINCT FROM: each side of the OR is a lookup in UQ_runs_idempotency.
                          AND (runs.user_id = input.user_id OR (runs.user_id IS NULL AND input.user_id IS NULL)))
  ),
  session AS (
    INSERT INTO sessions (id, component_type, component_id, user_id)
    SELECT session_id, component_type, component_id, user_id FROM fresh ORDER BY session_id ${ON_JOINED_SESSION}
    RETURNING id, user_id
  ),
  run AS (
    INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message, idempotency_key,
                      created_at, updated_at, trace_id, request_span, message_id)
    SELECT fresh.id, fresh.session_id, fresh.component_type, fresh.component_id, fresh.user_id, true, 'queued', fresh.message,
           fresh.idempotency_key, fresh.created_at, fresh.created_at, fresh.trace_id, fresh.request_span, fresh.message_id
    FROM fresh JOIN session ON session.id = fresh.session_id AND session.user_id IS NOT DISTINCT FROM fresh.user_id
    RETURNING id
  ),
  job AS (${BACKGROUND_JOB.job})
  SELECT ARRAY(SELECT id FROM job) AS created, ${BACKGROUND_JOB.notified} AS notified`,
};

/** A background run as BACKGROUND_RUNS takes it. */
interface BackgroundRunRow {
  run: RunEntity;
  payload: JobPayload;
  requestSpan: StoredRequestSpan | undefined;
}

/**
 * Background runs written together. Measured with 32 clients on two cores, two statements in flight made
 * statements of about ten runs and cut PostgreSQL's CPU a background POST from ~550 to ~130 µs. A run
 * waits for its statement as long as a query waits for a connection; two runs of one session, or under one
 * idempotency key, go in separate statements (a statement writing one row twice would fail).
 */
const BACKGROUND_BATCHES: WriteBatcherOptions<BackgroundRunRow> = {
  maxRows: 256,
  maxInFlight: 2,
  maxWaitMs: CONNECTION_WAIT_MS,
  keysOf: ({ run }) => [`session:${run.sessionId}`, ...(run.idempotencyKey === null ? [] : [`key:${run.userId}:${run.idempotencyKey}`])],
};

/**
 * A run executed in the api, in one statement: its session, the run, started, and its lease (see
 * SyncRunLeases). It is stamped with the creation time its first event (RunStarted) reports, and
 * names its trace when traced (its request span is stored when it finishes).
 */
const startedRun = (session: string) => `
  WITH session AS (${session}),
  run AS (
    INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message, idempotency_key,
                      created_at, updated_at, trace_id, message_id)
    SELECT $1, id, $3, $4, $5, false, 'running', $6, $7, $8, $8, $9, $10 FROM session RETURNING id
  ),
  lease AS (INSERT INTO run_leases (run_id) SELECT id FROM run)
  SELECT count(*)::int AS created FROM run`;

// Prepared by name: each api connection parses and plans these once, not per request.
const STARTED_RUN_NEW_SESSION = { name: 'runs_started_new_session', text: startedRun(NEW_SESSION) };
const STARTED_RUN_JOINED_SESSION = { name: 'runs_started_joined_session', text: startedRun(JOINED_SESSION) };
/**
 * One run with its job's state, as a run is answered (GET, the WebSocket's watch, cancel): polled, so
 * prepared. Columns come out under the entity's property names.
 */
const RUN_WITH_JOB = {
  name: 'runs_find_with_job',
  text: `SELECT r.id, r.session_id AS "sessionId", r.component_type AS "componentType", r.component_id AS "componentId",
                r.user_id AS "userId", r.background, r.status, r.message, r.content, r.error, r.model,
                r.input_tokens AS "inputTokens", r.output_tokens AS "outputTokens", r.idempotency_key AS "idempotencyKey",
                r.created_at AS "createdAt", r.updated_at AS "updatedAt", r.completed_at AS "completedAt",
                j.status AS "jobStatus", j.error AS "jobError", j.updated_at AS "jobUpdatedAt", j.completed_at AS "jobCompletedAt"
           FROM runs r LEFT JOIN queue_jobs j ON j.id = r.id
          WHERE r.id = $1 AND ${DataScope.preparedWhere('r.user_id', 2)}
            AND ($3::varchar IS NULL OR (r.component_type = $3 AND r.component_id = $4))`,
};

type RunWithJobRow = Omit<RunEntity, 'job'> & {
  jobStatus: JobStatus | null;
  jobError: string | null;
  jobUpdatedAt: Date | null;
  jobCompletedAt: Date | null;
};

function toRunEntity({ jobStatus, jobError, jobUpdatedAt, jobCompletedAt, ...run }: RunWithJobRow): RunEntity {
  const job =
    jobStatus === null || jobUpdatedAt === null
      ? null
      : { status: jobStatus, error: jobError, updatedAt: jobUpdatedAt, completedAt: jobCompletedAt };
  return Object.assign(new RunEntity(), run, { job });
}

/** Earlier turns a run sees: at most this many runs back, so a long session costs a bounded read. */
const HISTORY_RUNS = 50;

/**
 * The turns a run continuing its session sees (every such run reads them, in the api or a worker). The
 * run's own time is a scalar subquery, not a join: with the join, the generic plan a prepared statement
 * switches to after five runs sorted the whole session (12 ms at 30,000 runs, growing with it) where
 * the index read backwards finds the last 50 in 0.1 ms; now both plans read the index.
 */
const SESSION_HISTORY = {
  name: 'runs_session_history',
  text: `SELECT message, content FROM (
           SELECT r.message, r.content, r.created_at FROM runs r
           WHERE r.session_id = $1 AND r.created_at <= (SELECT created_at FROM runs WHERE id = $2)
             AND r.id <> $2 AND r.status = 'completed' AND r.content IS NOT NULL
           ORDER BY r.created_at DESC LIMIT ${HISTORY_RUNS}) earlier
         ORDER BY created_at`,
};

/** A run executed in the api finishes with its request span and its own spans, unless trace retention has cleared its trace meanwhile. */
const FINISH_STARTED_RUN = {
  name: 'runs_finish_started',
  text: `WITH lease AS (DELETE FROM run_leases WHERE run_id = $1)
         UPDATE runs SET status = $2, content = $3, error = $4, model = $5, input_tokens = $6, output_tokens = $7,
           request_span = CASE WHEN trace_id IS NOT NULL THEN $8 END,
           spans = CASE WHEN trace_id IS NOT NULL AND $9::text IS NOT NULL THEN ARRAY[$9::text] END,
           completed_at = now(), updated_at = now()
         WHERE id = $1
         RETURNING completed_at`,
};

/** A new run's $1 to $9, as both statements that store one take them. */
function newRunValues(run: RunEntity): unknown[] {
  return [
    run.id,
    run.sessionId,
    run.componentType,
    run.componentId,
    run.userId,
    run.message,
    run.idempotencyKey,
    run.createdAt,
    run.traceId ?? null,
  ];
}

/** Every read takes the caller's DataScope first and joins the run's queue job, the authority on a background run's state. */
@Injectable()
export class RunRepository {
  private readonly backgroundRuns = new WriteBatcher((rows: readonly BackgroundRunRow[]) => this.writeBackground(rows), BACKGROUND_BATCHES);

  constructor(
    @InjectRepository(RunEntity) private readonly rows: Repository<RunEntity>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /**
   * A background run in one round trip and no entity hydration, written with the background runs of
   * other requests arriving meanwhile (see WriteBatcher): its session (new, or an existing one of the
   * same user, marked used), the run and its job, workers notified on commit. False, with nothing of it
   * written, when the session belongs to another user or the run's idempotency key was used before (a
   * concurrent request with the same key may instead fail with the unique violation of
   * RUN_IDEMPOTENCY_CONSTRAINT); a run that waited too long for its statement fails with DatabaseBusyError.
   */
  insertBackground(run: RunEntity, payload: JobPayload, requestSpan?: StoredRequestSpan): Promise<boolean> {
    return this.backgroundRuns.submit({ run, payload, requestSpan });
  }

  private async writeBackground(rows: readonly BackgroundRunRow[]): Promise<boolean[]> {
    const column = <T>(pick: (row: BackgroundRunRow) => T) => rows.map(pick);
    const { rows: result } = await queryPrepared<{ created: string[] }>(this.dataSource, BACKGROUND_RUNS, [
      column(({ run }) => run.id),
      column(({ run }) => run.sessionId),
      column(({ run }) => run.componentType),
      column(({ run }) => run.componentId),
      column(({ run }) => run.userId),
      column(({ run }) => run.message),
      column(({ run }) => run.idempotencyKey),
      column(({ run }) => run.createdAt),
      column(({ run }) => run.traceId ?? null),
      column(({ payload }) => JSON.stringify(payload)),
      column(({ requestSpan }) => (requestSpan === undefined ? null : JSON.stringify(requestSpan))),
      column(({ run }) => run.messageId ?? null),
    ]);
    const created = new Set(result[0].created);
    return rows.map(({ run }) => created.has(run.id));
  }

  /**
   * A run executed in this process, in one round trip: its session (as for a background run) and the
   * run, started. False, with nothing written, when the session belongs to another user; a repeated
   * idempotency key fails as in insertBackground.
   */
  async insertStarted(run: RunEntity, newSession: boolean): Promise<boolean> {
    const { rows } = await queryPrepared<{ created: number }>(
      this.dataSource,
      newSession ? STARTED_RUN_NEW_SESSION : STARTED_RUN_JOINED_SESSION,
      [...newRunValues(run), run.messageId ?? null],
    );
    return rows[0].created === 1;
  }

  async findById(scope: DataScope, id: string, component?: { kind: ComponentKind; id: string }): Promise<RunEntity | null> {
    const { rows } = await queryPrepared<RunWithJobRow>(this.dataSource, RUN_WITH_JOB, [
      id,
      scope.ownerId,
      component?.kind ?? null,
      component?.id ?? null,
    ]);
    return rows.length === 0 ? null : toRunEntity(rows[0]);
  }

  /** The id the client gave a run's message (A2A's messageId), null when it gave none; the caller has read the run already. */
  async messageIdOf(id: string): Promise<string | null> {
    const row = await this.rows.findOne({ where: { id }, select: { id: true, messageId: true } });
    return row?.messageId ?? null;
  }

  /** The caller's earlier run under this idempotency key (keys are unique per attributed user). */
  findByIdempotencyKey(userId: string | null, key: string): Promise<RunEntity | null> {
    return this.rows.findOneBy({ userId: userId ?? IsNull(), idempotencyKey: key });
  }

  pageBySession(scope: DataScope, sessionId: string, request: PageRequest<SessionRunSortField>): Promise<[RunEntity[], number]> {
    return fetchPage(this.withJob(scope).andWhere('run.session_id = :sessionId', { sessionId }), request, {
      sort: 'run.created_at',
      id: 'run.id',
    });
  }

  /** The session's completed runs before `runId`, as turns, oldest first. */
  async history(sessionId: string, runId: string): Promise<Turn[]> {
    const { rows } = await queryPrepared<{ message: string; content: string }>(this.dataSource, SESSION_HISTORY, [sessionId, runId]);
    return rows.flatMap((row) => [
      { role: 'user' as const, content: row.message },
      { role: 'assistant' as const, content: row.content },
    ]);
  }

  /**
   * Records a synchronous run's outcome, and its request span when traced; returns the run as now
   * stored, or null when it is gone (its session deleted meanwhile).
   */
  async finish(run: RunEntity, outcome: RunOutcome, requestSpan?: StoredRequestSpan): Promise<RunEntity | null> {
    const { status, content, error, usage } = outcome;
    // In the order of FINISH_STARTED_RUN's $2 to $7.
    const written = {
      status,
      content,
      error,
      model: usage?.model ?? null,
      inputTokens: usage?.inputTokens ?? null,
      outputTokens: usage?.outputTokens ?? null,
    };
    const { rows } = await queryPrepared<{ completed_at: Date }>(this.dataSource, FINISH_STARTED_RUN, [
      run.id,
      ...Object.values(written),
      requestSpan === undefined ? null : JSON.stringify(requestSpan),
      storedSpans(outcome),
    ]);
    if (rows.length === 0) {
      return null;
    }
    const [{ completed_at: completedAt }] = rows;
    return Object.assign(new RunEntity(), run, written, { completedAt, updatedAt: completedAt });
  }

  /** Background runs' outcomes, written inside the queue's fenced transaction (see JobHandler.record): one statement. */
  async recordOutcomes(tx: ClientBase, results: readonly { id: string; outcome: RunOutcome }[]): Promise<void> {
    const column = <T>(pick: (outcome: RunOutcome) => T) => results.map(({ outcome }) => pick(outcome));
    // Spans are kept only while the run's trace is (retention clears it with its spans).
    await tx.query({
      text: `UPDATE runs r SET status = o.status, content = o.content, error = o.error, updated_at = now(),
               completed_at = CASE WHEN o.status IN ('completed', 'failed', 'cancelled') THEN now() ELSE NULL END,
               model = o.model, input_tokens = o.input_tokens, output_tokens = o.output_tokens,
               spans = CASE WHEN o.spans IS NULL OR r.trace_id IS NULL THEN r.spans ELSE array_append(r.spans, o.spans) END
             FROM unnest($1::uuid[], $2::varchar[], $3::text[], $4::text[], $5::varchar[], $6::int[], $7::int[], $8::text[])
               AS o(id, status, content, error, model, input_tokens, output_tokens, spans)
             WHERE r.id = ANY ($1::uuid[]) AND r.id = o.id`,
      values: [
        results.map(({ id }) => id),
        column((outcome) => outcome.status),
        column((outcome) => outcome.content),
        column((outcome) => outcome.error),
        column((outcome) => outcome.usage?.model ?? null),
        column((outcome) => outcome.usage?.inputTokens ?? null),
        column((outcome) => outcome.usage?.outputTokens ?? null),
        column(storedSpans),
      ],
    });
  }

  /** The final state of background runs whose jobs are being deleted past retention, in that transaction. */
  async settleFromExpiredJobs(tx: ClientBase, jobs: readonly ExpiredJob[]): Promise<void> {
    await tx.query({
      text: `UPDATE runs r SET status = e.status, error = e.error, completed_at = e.completed_at, updated_at = now()
             FROM unnest($1::uuid[], $2::varchar[], $3::text[], $4::timestamptz[]) AS e(id, status, error, completed_at)
             WHERE r.id = ANY ($1::uuid[]) AND r.id = e.id
               AND (r.status, r.error, r.completed_at) IS DISTINCT FROM (e.status, e.error, e.completed_at)`,
      values: [jobs.map((job) => job.id), jobs.map((job) => job.status), jobs.map((job) => job.error), jobs.map((job) => job.completedAt)],
    });
  }

  private withJob(scope: DataScope): SelectQueryBuilder<RunEntity> {
    const owner = scope.where('run.user_id');
    return this.rows
      .createQueryBuilder('run')
      .leftJoinAndMapOne('run.job', QueueJobEntity, 'job', 'job.id = run.id')
      .where(owner.sql, owner.params);
  }
}

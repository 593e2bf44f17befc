import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DataScope } from '@app/access';
import { inTransaction, poolOf } from '@app/database';
import { CancellationIntents } from '@app/queue';
import { TracesModule } from '@app/traces';

import { bootModule, ModuleOnDatabase, principals } from '../../../test/support/nest-module';
import { Component, RunContext } from './component';
import { RunEvent } from './run.dto';
import { RunEntity } from './run.entity';
import { RunRepository } from './run.repository';
import { RunErrorCode } from './runs.exception';
import { RunsModule } from './runs.module';
import { RunRequest, RunsService } from './runs.service';

const root = principals.securityKey();

/** Resolves when a run of the `held` agent has started; its `release` lets the run go on to its checkpoint. */
class Gate {
  private started!: () => void;
  readonly running = new Promise<void>((resolve) => (this.started = resolve));
  release!: () => void;
  private readonly released = new Promise<void>((resolve) => (this.release = resolve));

  async pass(context: RunContext): Promise<string> {
    this.started();
    await this.released;
    await context.checkpoint();
    return 'went on';
  }
}

// The run domain's rules (status precedence, idempotency, cancellation), in process on a cloned database.
describe('RunsService', () => {
  let app: ModuleOnDatabase;
  let runs: RunsService;
  let gate = new Gate();
  const components: Component[] = [
    { kind: 'agent', id: 'echo', name: 'Echo', run: async ({ message }) => `echo: ${message}` },
    { kind: 'agent', id: 'other', name: 'Other', run: async () => 'other' },
    { kind: 'agent', id: 'held', name: 'Held', run: (context) => gate.pass(context) },
    {
      kind: 'agent',
      id: 'broken',
      name: 'Broken',
      run: async () => {
        throw new Error('broken on purpose');
      },
    },
  ];
  let counter = 0;
  const key = () => `key-${++counter}`;
  const ask = (fields: Partial<RunRequest> = {}): RunRequest => ({ message: 'hi', ...fields });

  beforeAll(async () => {
    app = await bootModule(
      { imports: [TracesModule.forRoot('platform-test'), RunsModule.forRoot({ components })] },
      { QUEUE_CANCEL_INTENT_TTL_SECONDS: '60' },
    );
    runs = app.get(RunsService);
  });

  afterAll(async () => {
    await app?.close();
  });

  describe('status precedence', () => {
    it("a background run answers its job's status and error, whatever its own row says", async () => {
      const accepted = await runs.enqueue(root, 'agent', 'echo', ask());
      expect(accepted.status).toBe('queued');

      await app.sql(`UPDATE queue_jobs SET status = 'failed', error = 'lost its worker', completed_at = now() WHERE id = $1`, [
        accepted.run_id,
      ]);

      const [row] = await app.sql<{ status: string }>('SELECT status FROM runs WHERE id = $1', [accepted.run_id]);
      expect(row.status).toBe('queued');
      await expect(runs.get(root, 'agent', 'echo', accepted.run_id)).resolves.toMatchObject({
        status: 'failed',
        error: 'lost its worker',
        content: null,
        background: true,
      });
    });

    it("a run read by id carries every column and its job's state, as its session's page reads it", async () => {
      const accepted = await runs.enqueue(root, 'agent', 'echo', ask({ idempotency_key: key() }));
      await app.sql(`UPDATE queue_jobs SET status = 'failed', error = 'lost', completed_at = now() WHERE id = $1`, [accepted.run_id]);
      const repository = app.get(RunRepository);
      const { job, ...byId } = (await repository.findById(DataScope.all(), accepted.run_id))!;
      const request = { page: 1, limit: 10, sortBy: 'created_at' as const, sortOrder: 'asc' as const, offset: 0 };
      const [[paged]] = await repository.pageBySession(DataScope.all(), accepted.session_id, request);
      const { job: pagedJob, ...fromPage } = paged;
      expect(byId).toEqual({ ...fromPage });
      expect(job).toEqual({ status: 'failed', error: 'lost', updatedAt: pagedJob!.updatedAt, completedAt: pagedJob!.completedAt });
    });

    it('a synchronous run answers its own row; content only once completed', async () => {
      const finished = await runs.run(root, 'agent', 'echo', ask({ message: 'ping' }));
      expect(finished).toMatchObject({ status: 'completed', content: 'echo: ping', error: null, background: false });

      await app.sql(`UPDATE runs SET status = 'failed', error = 'rewritten' WHERE id = $1`, [finished.run_id]);
      await expect(runs.get(root, 'agent', 'echo', finished.run_id)).resolves.toMatchObject({
        status: 'failed',
        content: null,
        error: 'rewritten',
      });
    });

    it('a run is found only under its own component, and only by a caller who may see it', async () => {
      const finished = await runs.run(principals.jwt('alice', []), 'agent', 'echo', ask());
      const bob = { ...principals.jwt('bob', []), selfScoped: true };
      const alice = { ...principals.jwt('alice', []), selfScoped: true };

      await expect(runs.get(alice, 'agent', 'echo', finished.run_id)).resolves.toMatchObject({ run_id: finished.run_id });

      await expect(runs.get(root, 'agent', 'other', finished.run_id)).rejects.toMatchObject({ code: RunErrorCode.RunNotFound });
      await expect(runs.get(bob, 'agent', 'echo', finished.run_id)).rejects.toMatchObject({ code: RunErrorCode.RunNotFound });
      await expect(runs.get(root, 'agent', 'echo', 'not-a-uuid')).rejects.toMatchObject({ code: RunErrorCode.RunNotFound });
      await expect(runs.get(bob, 'agent', 'echo', finished.run_id)).rejects.toMatchObject({ detail: `Run '${finished.run_id}' not found` });
    });

    it('a non-UUID id (as A2A and MCP callers may send) is not found, and is not quoted back', async () => {
      const long = `${'x'.repeat(100_000)}\u0000`;
      for (const lookup of [runs.get(root, 'agent', 'echo', long), runs.locate(root, long)]) {
        await expect(lookup).rejects.toMatchObject({ code: RunErrorCode.RunNotFound, detail: 'Run not found: run ids are UUIDs' });
      }
    });
  });

  describe('storing a run executed in this process', () => {
    const started = (fields: Partial<RunEntity>) =>
      Object.assign(new RunEntity(), {
        id: randomUUID(),
        sessionId: randomUUID(),
        componentType: 'agent',
        componentId: 'echo',
        userId: 'sa:storer',
        background: false,
        status: 'running',
        message: 'hi',
        content: null,
        error: null,
        idempotencyKey: null,
        createdAt: new Date('2020-01-02T03:04:05.678Z'),
        ...fields,
      });

    it('writes the session and the run, started, with the creation time its first event reports', async () => {
      const run = started({});
      expect(await app.get(RunRepository).insertStarted(run, true)).toBe(true);
      const [row] = await app.sql('SELECT status, background, created_at, updated_at FROM runs WHERE id = $1', [run.id]);
      expect(row).toEqual({ status: 'running', background: false, created_at: run.createdAt, updated_at: run.createdAt });
      expect(await app.sql('SELECT user_id FROM sessions WHERE id = $1', [run.sessionId])).toEqual([{ user_id: 'sa:storer' }]);
    });

    it('answers the run as stored, without reading it back: as run, as stream, completed and failed', async () => {
      for (const componentId of ['echo', 'broken']) {
        const answered = await runs.run(root, 'agent', componentId, ask());
        expect(await runs.get(root, 'agent', componentId, answered.run_id)).toEqual(answered);
        const events: RunEvent[] = [];
        await runs.stream(root, 'agent', componentId, ask(), (event) => events.push(event));
        const final = events.at(-1)!.data;
        expect(await runs.get(root, 'agent', componentId, String(final.run_id))).toEqual(final);
      }
    });

    it('finishes the run as a read then finds it: times to the millisecond, usage, status and content', async () => {
      const repository = app.get(RunRepository);
      const run = started({ createdAt: new Date() });
      await repository.insertStarted(run, true);
      const usage = { model: 'bench-model', inputTokens: 12, outputTokens: 34 };
      const finished = await repository.finish(run, { status: 'completed', content: 'done', error: null, usage });
      const { job, ...read } = (await repository.findById(DataScope.all(), run.id))!;
      expect(job).toBeNull();
      expect({ ...finished }).toEqual(read);
      expect(read).toMatchObject({ status: 'completed', content: 'done', model: 'bench-model', inputTokens: 12, outputTokens: 34 });
    });

    it("writes nothing into another user's session", async () => {
      const first = started({});
      await app.get(RunRepository).insertStarted(first, true);
      const intruder = started({ sessionId: first.sessionId, userId: 'sa:intruder' });
      expect(await app.get(RunRepository).insertStarted(intruder, false)).toBe(false);
      expect(await app.sql('SELECT id FROM runs WHERE id = $1', [intruder.id])).toEqual([]);
    });
  });

  describe('idempotency', () => {
    it('a repeated key answers the earlier run without running again', async () => {
      const idempotency_key = key();
      const first = await runs.run(root, 'agent', 'echo', ask({ message: 'one', idempotency_key }));
      const again = await runs.run(root, 'agent', 'echo', ask({ message: 'two', idempotency_key }));

      expect(again).toEqual(first);
      const [{ count }] = await app.sql<{ count: number }>('SELECT count(*)::int AS count FROM runs WHERE idempotency_key = $1', [
        idempotency_key,
      ]);
      expect(count).toBe(1);
    });

    it('the header wins over the body field', async () => {
      const header = key();
      const byHeader = await runs.run(root, 'agent', 'echo', ask({ idempotencyKeyHeader: header, idempotency_key: key() }));
      const again = await runs.run(root, 'agent', 'echo', ask({ idempotency_key: header }));
      expect(again.run_id).toBe(byHeader.run_id);
    });

    it('a key reused for another component is a 409; the same key of another user is theirs', async () => {
      const idempotency_key = key();
      const alice = principals.jwt('alice', []);
      const first = await runs.run(alice, 'agent', 'echo', ask({ idempotency_key }));

      await expect(runs.run(alice, 'agent', 'other', ask({ idempotency_key }))).rejects.toMatchObject({
        code: RunErrorCode.IdempotencyKeyReused,
      });
      const bobs = await runs.run(principals.jwt('bob', []), 'agent', 'other', ask({ idempotency_key }));
      expect(bobs.run_id).not.toBe(first.run_id);
    });

    it('a background run with a repeated key is one run and one job', async () => {
      const idempotency_key = key();
      const first = await runs.enqueue(root, 'agent', 'echo', ask({ idempotency_key }));
      const again = await runs.enqueue(root, 'agent', 'echo', ask({ idempotency_key }));

      expect(again.run_id).toBe(first.run_id);
      const [{ count }] = await app.sql<{ count: number }>('SELECT count(*)::int AS count FROM queue_jobs WHERE id = $1', [first.run_id]);
      expect(count).toBe(1);
    });

    it('refuses an over-long or control-character header (422 on header.idempotency-key), and stream with background (400)', async () => {
      await expect(runs.run(root, 'agent', 'echo', ask({ idempotencyKeyHeader: 'k'.repeat(513) }))).rejects.toMatchObject({
        issues: [{ loc: ['header', 'idempotency-key'], type: 'maxLength' }],
      });
      await expect(runs.run(root, 'agent', 'echo', ask({ idempotencyKeyHeader: 'a\tb' }))).rejects.toMatchObject({
        issues: [{ loc: ['header', 'idempotency-key'], type: 'pattern' }],
      });
      await expect(runs.enqueue(root, 'agent', 'echo', ask({ stream: true, background: true }))).rejects.toMatchObject({
        code: RunErrorCode.InvalidRequest,
      });
      // Positive control: 512 characters is allowed.
      await expect(runs.run(root, 'agent', 'echo', ask({ idempotencyKeyHeader: 'k'.repeat(512) }))).resolves.toMatchObject({
        status: 'completed',
      });
    });
  });

  describe('background runs written together', () => {
    const transactionsOf = async (ids: string[]) =>
      (await app.sql<{ count: number }>('SELECT count(DISTINCT xmin::text)::int AS count FROM runs WHERE id = ANY ($1::uuid[])', [ids]))[0]
        .count;

    it('runs posted in the same turn are written by one statement, each with its session and job', async () => {
      const accepted = await Promise.all(Array.from({ length: 8 }, () => runs.enqueue(root, 'agent', 'echo', ask())));
      const ids = accepted.map(({ run_id }) => run_id);

      expect(new Set(ids).size).toBe(8);
      expect(await transactionsOf(ids)).toBe(1);
      const [{ jobs, sessions }] = await app.sql<{ jobs: number; sessions: number }>(
        `SELECT (SELECT count(*)::int FROM queue_jobs WHERE id = ANY ($1::uuid[])) AS jobs,
                (SELECT count(*)::int FROM sessions WHERE id = ANY ($2::varchar[])) AS sessions`,
        [ids, accepted.map(({ session_id }) => session_id)],
      );
      expect({ jobs, sessions }).toEqual({ jobs: 8, sessions: 8 });
    });

    it("a repeated key, another user's session or one session twice in the same turn fails or answers only its own request", async () => {
      const alice = principals.jwt('alice', []);
      const bobs = await runs.enqueue(principals.jwt('bob', []), 'agent', 'echo', ask());
      const idempotency_key = key();
      const earlier = await runs.enqueue(alice, 'agent', 'echo', ask({ idempotency_key }));
      const shared = `shared-${randomUUID()}`;
      const sessionsBefore = (await app.sql<{ count: number }>('SELECT count(*)::int AS count FROM sessions'))[0].count;

      const [fresh, repeated, intruding, ...joined] = await Promise.allSettled([
        runs.enqueue(alice, 'agent', 'echo', ask()),
        runs.enqueue(alice, 'agent', 'echo', ask({ idempotency_key })),
        runs.enqueue(alice, 'agent', 'echo', ask({ session_id: bobs.session_id })),
        runs.enqueue(alice, 'agent', 'echo', ask({ session_id: shared })),
        runs.enqueue(alice, 'agent', 'echo', ask({ session_id: shared })),
      ]);

      expect(fresh).toMatchObject({ status: 'fulfilled', value: { status: 'queued' } });
      expect(repeated).toMatchObject({ status: 'fulfilled', value: { run_id: earlier.run_id } });
      expect(intruding).toMatchObject({ status: 'rejected', reason: { code: RunErrorCode.SessionNotFound } });
      expect(joined).toMatchObject([
        { status: 'fulfilled', value: { session_id: shared } },
        { status: 'fulfilled', value: { session_id: shared } },
      ]);
      // No session without its run: the fresh run's and the shared one, nothing for the refused or repeated requests.
      const sessionsAfter = (await app.sql<{ count: number }>('SELECT count(*)::int AS count FROM sessions'))[0].count;
      expect(sessionsAfter - sessionsBefore).toBe(2);
      const [{ count }] = await app.sql<{ count: number }>(
        `SELECT count(*)::int AS count FROM runs WHERE session_id = $1 OR idempotency_key = $2`,
        [bobs.session_id, idempotency_key],
      );
      expect(count).toBe(2); // bob's own run and alice's earlier one
    });
    it("a client's retry (a key used before) answers the earlier run and leaves the runs beside it in one statement", async () => {
      const idempotency_key = key();
      const earlier = await runs.enqueue(root, 'agent', 'echo', ask({ idempotency_key }));

      const [retried, ...beside] = await Promise.all([
        runs.enqueue(root, 'agent', 'echo', ask({ idempotency_key })),
        ...Array.from({ length: 5 }, () => runs.enqueue(root, 'agent', 'echo', ask())),
      ]);

      expect(retried.run_id).toBe(earlier.run_id);
      // Not written again one by one, as after a statement refused for one row's key.
      expect(await transactionsOf(beside.map(({ run_id }) => run_id))).toBe(1);
      const [{ count }] = await app.sql<{ count: number }>('SELECT count(*)::int AS count FROM runs WHERE idempotency_key = $1', [
        idempotency_key,
      ]);
      expect(count).toBe(1);
    });

    it('two requests with one new key in the same turn are one run, whichever statement writes it', async () => {
      const idempotency_key = key();
      const answers = await Promise.all([
        runs.enqueue(root, 'agent', 'echo', ask({ idempotency_key })),
        runs.enqueue(root, 'agent', 'echo', ask({ idempotency_key })),
        ...Array.from({ length: 3 }, () => runs.enqueue(root, 'agent', 'echo', ask())),
      ]);

      expect(answers[1].run_id).toBe(answers[0].run_id);
      expect(new Set(answers.map(({ run_id }) => run_id)).size).toBe(4);
      const [{ runs: written, jobs }] = await app.sql<{ runs: number; jobs: number }>(
        `SELECT (SELECT count(*)::int FROM runs WHERE idempotency_key = $1) AS runs,
                (SELECT count(*)::int FROM queue_jobs WHERE idempotency_key = $1) AS jobs`,
        [idempotency_key],
      );
      expect({ written, jobs }).toEqual({ written: 1, jobs: 1 });
    });

    it("a run naming another user's session gets none, even with that user's own run in the same statement", async () => {
      const alice = principals.jwt('alice', []);
      const bob = principals.jwt('bob', []);
      const bobs = await runs.enqueue(bob, 'agent', 'echo', ask());

      const [intruding, owners] = await Promise.allSettled([
        runs.enqueue(alice, 'agent', 'echo', ask({ session_id: bobs.session_id })),
        runs.enqueue(bob, 'agent', 'echo', ask({ session_id: bobs.session_id })),
      ]);

      expect(intruding).toMatchObject({ status: 'rejected', reason: { code: RunErrorCode.SessionNotFound } });
      expect(owners).toMatchObject({ status: 'fulfilled', value: { session_id: bobs.session_id } });
      const users = await app.sql<{ user_id: string }>('SELECT user_id FROM runs WHERE session_id = $1', [bobs.session_id]);
      expect(users.map(({ user_id }) => user_id)).toEqual(['bob', 'bob']);
    });
  });

  describe('cancellation', () => {
    it('a queued background run is cancelled at once, and a finished one is answered unchanged', async () => {
      const accepted = await runs.enqueue(root, 'agent', 'echo', ask());
      await expect(runs.cancel(root, 'agent', 'echo', accepted.run_id)).resolves.toMatchObject({ status: 'cancelled' });
      const [job] = await app.sql<{ status: string }>('SELECT status FROM queue_jobs WHERE id = $1', [accepted.run_id]);
      expect(job.status).toBe('cancelled');

      const finished = await runs.run(root, 'agent', 'echo', ask());
      await expect(runs.cancel(root, 'agent', 'echo', finished.run_id)).resolves.toEqual(finished);
    });

    it('a running run stops at its next checkpoint once cancelled', async () => {
      gate = new Gate();
      const running = runs.run(root, 'agent', 'held', ask());
      await gate.running;
      const [{ id }] = await app.sql<{ id: string }>(`SELECT id FROM runs WHERE component_id = 'held' AND status = 'running'`);

      await runs.cancel(root, 'agent', 'held', id);
      gate.release();

      await expect(running).resolves.toMatchObject({ status: 'cancelled', error: 'Run was cancelled' });
    });

    it('a run executed here stores its request span and its own when it finishes, unless trace retention cleared its trace meanwhile', async () => {
      const spansOf = async (id: string) =>
        (
          await app.sql<{ traced: boolean; span: boolean; own: string[] | null }>(
            `SELECT trace_id IS NOT NULL AS traced, request_span IS NOT NULL AS span, spans AS own FROM runs WHERE id = $1`,
            [id],
          )
        )[0];
      const echoed = await runs.run(root, 'agent', 'echo', ask());
      const stored = await spansOf(echoed.run_id);
      expect(stored).toMatchObject({ traced: true, span: true });
      const request = JSON.parse(
        (await app.sql<{ span: string }>(`SELECT request_span AS span FROM runs WHERE id = $1`, [echoed.run_id]))[0].span,
      );
      expect(stored.own!.map((execution) => JSON.parse(execution))).toEqual([
        [
          expect.objectContaining({
            name: 'run.component',
            parent_id: request.span_id,
            attributes: expect.objectContaining({ 'run.id': echoed.run_id }),
          }),
        ],
      ]);

      gate = new Gate();
      const running = runs.run(root, 'agent', 'held', ask());
      await gate.running;
      const [{ id }] = await app.sql<{ id: string }>(`SELECT id FROM runs WHERE component_id = 'held' AND status = 'running'`);
      expect(await spansOf(id)).toEqual({ traced: true, span: false, own: null });
      // As TraceRetention clears an expired trace from its run.
      await app.sql('UPDATE runs SET trace_id = NULL, request_span = NULL WHERE id = $1', [id]);
      gate.release();
      await expect(running).resolves.toMatchObject({ status: 'completed' });
      expect(await spansOf(id)).toEqual({ traced: false, span: false, own: null });
    });

    it('a worker’s outcomes append each execution’s spans to its run’s, while the run’s trace is kept', async () => {
      const repository = app.get(RunRepository);
      const background = await runs.enqueue(root, 'agent', 'echo', ask({ background: true }));
      const untraced = await runs.enqueue(root, 'agent', 'echo', ask({ background: true }));
      await app.sql('UPDATE runs SET trace_id = NULL, request_span = NULL WHERE id = $1', [untraced.run_id]);
      const span = (name: string) => ({
        span_id: name.padStart(16, '0'),
        parent_id: null,
        name,
        started_at: 1,
        ended_at: 2,
        attributes: {},
      });
      const record = (spans: ReturnType<typeof span>[]) =>
        inTransaction(poolOf(app.dataSource), (client) =>
          repository.recordOutcomes(
            client,
            [background.run_id, untraced.run_id].map((id) => ({ id, outcome: { status: 'failed', content: null, error: 'x', spans } })),
          ),
        );
      await record([span('a1')]);
      await record([]);
      await record([span('a2'), span('b2')]);
      const rows = await app.sql<{ id: string; spans: string[] | null }>(`SELECT id, spans FROM runs WHERE id = ANY ($1::uuid[])`, [
        [background.run_id, untraced.run_id],
      ]);
      const byId = new Map(
        rows.map((row) => [row.id, row.spans?.map((execution) => JSON.parse(execution).map((s: { name: string }) => s.name))]),
      );
      expect(byId.get(background.run_id)).toEqual([['a1'], ['a2', 'b2']]);
      expect(byId.get(untraced.run_id)).toBeUndefined();
    });

    it('an intent is live for QUEUE_CANCEL_INTENT_TTL_SECONDS after the latest request, then no longer cancels', async () => {
      const intents = app.get(CancellationIntents);
      gate = new Gate();
      const running = runs.run(root, 'agent', 'held', ask());
      await gate.running;
      const [{ id }] = await app.sql<{ id: string }>(`SELECT id FROM runs WHERE component_id = 'held' AND status = 'running'`);
      await runs.cancel(root, 'agent', 'held', id);
      expect(await intents.isLive(id)).toBe(true);

      // Recorded 61 s ago with a 60 s TTL: past its life, so the run's checkpoint lets it go on.
      await app.sql(`UPDATE queue_cancellation_intents SET requested_at = now() - interval '61 seconds' WHERE run_id = $1`, [id]);
      expect(await intents.isLive(id)).toBe(false);
      gate.release();
      await expect(running).resolves.toMatchObject({ status: 'completed', content: 'went on' });

      // A repeated cancel renews it.
      await app.dataSource.transaction((manager) => intents.record(manager, id, null));
      expect(await intents.isLive(id)).toBe(true);
    });
  });
});

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run's trace summary and request span live on the run's row. The summary was a row of its own
 * (five indexes) and the request span another (two), written for every traced run: the largest part
 * of what tracing cost a background POST. The run's row already says what the summary said (session,
 * user, component, start); it gains the trace id, with an index for GET /traces/{trace_id} and one for
 * the newest-first lists (everyone's, and one user's), all partial so that an untraced run pays for none. The request span is
 * written with the row (by the statement that stores a background run, or the one that finishes a run
 * executed in the api), and only what the row does not say: its ids, times and a failure. Spans stored
 * earlier stay in trace_spans, where reads still find them.
 *
 * `traces` stays, empty, for the previous release during a rolling update: its span batches still insert
 * summaries there, and a trigger moves each onto its run instead (its request spans land in trace_spans,
 * where reads find them). It reads through `trace_summaries`, whose columns are unchanged. A later
 * migration drops table and trigger once no such release runs.
 */
export class TraceSummaryOnRuns1766000000001 implements MigrationInterface {
  name = 'TraceSummaryOnRuns1766000000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "runs" ADD "trace_id" character varying(32), ADD "request_span" text`);
    await queryRunner.query(`UPDATE "runs" r SET "trace_id" = t."trace_id" FROM "traces" t WHERE t."run_id" = r."id"`);
    await queryRunner.query(`CREATE INDEX "IDX_runs_trace" ON "runs" ("trace_id") WHERE "trace_id" IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX "IDX_runs_traced_created" ON "runs" ("created_at") WHERE "trace_id" IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX "IDX_runs_traced_user_created" ON "runs" ("user_id", "created_at") WHERE "trace_id" IS NOT NULL`);
    await queryRunner.query(`DROP VIEW "trace_summaries"`);
    await queryRunner.query(`TRUNCATE "traces"`);
    await queryRunner.query(`DROP INDEX "IDX_traces_user_started", "IDX_traces_started", "IDX_traces_session", "IDX_traces_trace"`);
    await queryRunner.query(`CREATE FUNCTION "traces_onto_runs"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE "runs" SET "trace_id" = NEW."trace_id" WHERE "id" = NEW."run_id" AND "trace_id" IS NULL;
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER "traces_onto_runs" BEFORE INSERT ON "traces" FOR EACH ROW EXECUTE FUNCTION "traces_onto_runs"()`,
    );
    await queryRunner.query(`CREATE VIEW "trace_summaries" AS
      SELECT r."trace_id", r."id" AS "run_id", r."session_id", r."user_id", r."component_type", r."component_id",
             r."created_at" AS "started_at",
             COALESCE(j."status", r."status") AS "status",
             COALESCE(j."completed_at", r."completed_at") AS "ended_at"
        FROM "runs" r
        -- An outer join the planner drops when a query reads no column of it: a count.
        LEFT JOIN "queue_jobs" j ON j."id" = r."id"
       WHERE r."trace_id" IS NOT NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP VIEW "trace_summaries"`);
    await queryRunner.query(`DROP TRIGGER "traces_onto_runs" ON "traces"`);
    await queryRunner.query(`DROP FUNCTION "traces_onto_runs"()`);
    await queryRunner.query(`INSERT INTO "traces" ("trace_id", "run_id", "session_id", "user_id", "component_type", "component_id", "started_at")
      SELECT "trace_id", "id", "session_id", "user_id", "component_type", "component_id", "created_at" FROM "runs" WHERE "trace_id" IS NOT NULL`);
    // Request spans go back among the spans, one batch row each, in full: with their name and the run's attributes.
    await queryRunner.query(`INSERT INTO "trace_spans" ("trace_id", "started_at", "spans")
      SELECT "trace_id", "created_at", jsonb_build_array("request_span"::jsonb || jsonb_build_object(
               'name', 'run.request',
               'attributes', jsonb_strip_nulls(jsonb_build_object(
                 'run.id', "id", 'session.id', "session_id", 'user.id', "user_id", 'component.type', "component_type",
                 'component.id', "component_id", 'run.status', CASE WHEN "background" THEN 'queued' ELSE 'running' END))
                 || COALESCE("request_span"::jsonb -> 'attributes', '{}')))::text
        FROM "runs" WHERE "request_span" IS NOT NULL AND "trace_id" IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_user_started" ON "traces" ("user_id", "started_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_started" ON "traces" ("started_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_session" ON "traces" ("session_id")`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_trace" ON "traces" ("trace_id")`);
    await queryRunner.query(`CREATE VIEW "trace_summaries" AS
      SELECT t."trace_id", t."run_id", t."session_id", t."user_id", t."component_type", t."component_id", t."started_at",
             COALESCE(j."status", r."status") AS "status",
             COALESCE(j."completed_at", r."completed_at") AS "ended_at"
        FROM "traces" t
        LEFT JOIN "runs" r ON r."id" = t."run_id"
        LEFT JOIN "queue_jobs" j ON j."id" = t."run_id"`);
    await queryRunner.query(`DROP INDEX "IDX_runs_traced_user_created"`);
    await queryRunner.query(`DROP INDEX "IDX_runs_traced_created"`);
    await queryRunner.query(`DROP INDEX "IDX_runs_trace"`);
    await queryRunner.query(`ALTER TABLE "runs" DROP COLUMN "trace_id", DROP COLUMN "request_span"`);
  }
}

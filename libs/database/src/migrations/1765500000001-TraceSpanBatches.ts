import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cheaper trace writes; with tracing on they were half of what a background run cost PostgreSQL.
 * - A trace's summary is written once, from the api's request span, and never updated: its status and
 *   end are the run's (its job's while one exists), read through the `trace_summaries` view. The
 *   worker used to rewrite the row (a non-HOT update through five indexes) for every run.
 * - Spans are stored as one row per trace per written batch (a JSON array) instead of a row per span:
 *   a background run's trace is two such rows, the api's and the worker's. Their age is only read to
 *   delete old ones, which a BRIN index serves at a fraction of a B-tree's upkeep.
 * The arrays are kept as text: PostgreSQL never looks inside them, and validating JSON on the way in
 * cost more than the rest of the insert. Span times become epoch milliseconds with their fractions.
 */
export class TraceSpanBatches1765500000001 implements MigrationInterface {
  name = 'TraceSpanBatches1765500000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "traces" DROP COLUMN "status", DROP COLUMN "ended_at"`);
    await queryRunner.query(`CREATE VIEW "trace_summaries" AS
      SELECT t."trace_id", t."run_id", t."session_id", t."user_id", t."component_type", t."component_id", t."started_at",
             COALESCE(j."status", r."status") AS "status",
             COALESCE(j."completed_at", r."completed_at") AS "ended_at"
        -- Outer joins (every trace has its run) let the planner drop them when a query reads no column of theirs: a count.
        FROM "traces" t
        LEFT JOIN "runs" r ON r."id" = t."run_id"
        LEFT JOIN "queue_jobs" j ON j."id" = t."run_id"`);
    await queryRunner.query(`ALTER TABLE "trace_spans" RENAME TO "trace_spans_by_span"`);
    await queryRunner.query(`CREATE TABLE "trace_spans" (
      "trace_id" character varying(32) NOT NULL,
      "started_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      "spans" text NOT NULL)`);
    await queryRunner.query(`INSERT INTO "trace_spans" ("trace_id", "started_at", "spans")
      SELECT "trace_id", min("started_at"), json_agg(json_build_object(
               'span_id', "span_id", 'parent_id', "parent_id", 'name', "name",
               'started_at', extract(epoch FROM "started_at") * 1000, 'ended_at', extract(epoch FROM "ended_at") * 1000,
               'attributes', "attributes") ORDER BY "started_at")::text
        FROM "trace_spans_by_span" GROUP BY "trace_id"`);
    await queryRunner.query(`DROP TABLE "trace_spans_by_span"`);
    await queryRunner.query(`CREATE INDEX "IDX_trace_spans_trace" ON "trace_spans" ("trace_id")`);
    await queryRunner.query(`CREATE INDEX "IDX_trace_spans_started" ON "trace_spans" USING brin ("started_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "trace_spans" RENAME TO "trace_span_batches"`);
    await queryRunner.query(`DROP INDEX "IDX_trace_spans_started"`);
    await queryRunner.query(`CREATE TABLE "trace_spans" (
      "trace_id" character varying(32) NOT NULL,
      "span_id" character varying(16) NOT NULL,
      "parent_id" character varying(16),
      "name" character varying(128) NOT NULL,
      "started_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      "ended_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      "attributes" jsonb NOT NULL DEFAULT '{}',
      CONSTRAINT "PK_trace_spans" PRIMARY KEY ("trace_id", "span_id"))`);
    await queryRunner.query(`INSERT INTO "trace_spans"
      SELECT b."trace_id", s->>'span_id', s->>'parent_id', s->>'name', to_timestamp((s->>'started_at')::float8 / 1000),
             to_timestamp((s->>'ended_at')::float8 / 1000), (s->'attributes')::jsonb
        FROM "trace_span_batches" b, json_array_elements(b."spans"::json) s
      ON CONFLICT DO NOTHING`);
    await queryRunner.query(`DROP TABLE "trace_span_batches"`);
    await queryRunner.query(`CREATE INDEX "IDX_trace_spans_started" ON "trace_spans" ("started_at")`);
    await queryRunner.query(`DROP VIEW "trace_summaries"`);
    await queryRunner.query(
      `ALTER TABLE "traces" ADD "status" character varying(16) NOT NULL DEFAULT 'completed', ADD "ended_at" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(`ALTER TABLE "traces" ALTER COLUMN "status" DROP DEFAULT`);
  }
}

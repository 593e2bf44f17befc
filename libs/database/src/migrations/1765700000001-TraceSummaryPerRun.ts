import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A trace summary per run, not per trace id. A caller's traceparent is taken as given, so several runs
 * (of one caller, or of another who learned the id) can share a trace id; only the first of them had a
 * summary, and a second user's run had none they could read. Each run's summary is now its own row,
 * keyed by the run. The trace id keeps a B-tree: a caller sending one traceparent with every request
 * piles its runs under one key, which a hash index would chain into a single bucket.
 */
export class TraceSummaryPerRun1765700000001 implements MigrationInterface {
  name = 'TraceSummaryPerRun1765700000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "traces" DROP CONSTRAINT "PK_traces"`);
    await queryRunner.query(`DROP INDEX "IDX_traces_run"`);
    await queryRunner.query(`ALTER TABLE "traces" ADD CONSTRAINT "PK_traces" PRIMARY KEY ("run_id")`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_trace" ON "traces" ("trace_id")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // One summary per trace id again: the first run's, as before.
    await queryRunner.query(`DELETE FROM "traces" t USING "traces" e
      WHERE e."trace_id" = t."trace_id" AND (e."started_at", e."run_id") < (t."started_at", t."run_id")`);
    await queryRunner.query(`DROP INDEX "IDX_traces_trace"`);
    await queryRunner.query(`ALTER TABLE "traces" DROP CONSTRAINT "PK_traces"`);
    await queryRunner.query(`ALTER TABLE "traces" ADD CONSTRAINT "PK_traces" PRIMARY KEY ("trace_id")`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_run" ON "traces" USING hash ("run_id")`);
  }
}

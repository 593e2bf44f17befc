import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A trace a run's request starts has the run's id as its trace id (32 hex digits): GET /traces/{trace_id} finds
 * such a run through its primary key, so the index of trace ids keeps only the others (a caller's trace, or
 * one the OpenTelemetry SDK started while exporting). An entry at a random place in that index was the
 * largest part of what tracing cost PostgreSQL per background run. Runs traced earlier have trace ids of their
 * own and stay in it.
 */
export class OwnTraceIds1766100000002 implements MigrationInterface {
  name = 'OwnTraceIds1766100000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_runs_trace"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_runs_trace" ON "runs" ("trace_id") WHERE "trace_id" IS NOT NULL AND "trace_id" <> replace("id"::text, '-', '')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_runs_trace"`);
    await queryRunner.query(`CREATE INDEX "IDX_runs_trace" ON "runs" ("trace_id") WHERE "trace_id" IS NOT NULL`);
  }
}

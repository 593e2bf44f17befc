import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run's own spans (its queue wait, its component, the component's steps) are stored with its outcome, in
 * the write that records it anyway: one JSON array of spans per execution (an attempt), appended. They were
 * a trace_spans row per run and batch, written by the SDK's batch processor: the largest part of what
 * tracing cost a worker. Spans stored earlier stay in trace_spans, where reads still find them, as do those a
 * previous release still writes during a rolling update.
 */
export class RunSpansOnRuns1766100000001 implements MigrationInterface {
  name = 'RunSpansOnRuns1766100000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "runs" ADD "spans" text[]`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`INSERT INTO "trace_spans" ("trace_id", "started_at", "spans")
      SELECT "trace_id", "created_at", unnest("spans") FROM "runs" WHERE "spans" IS NOT NULL AND "trace_id" IS NOT NULL`);
    await queryRunner.query(`ALTER TABLE "runs" DROP COLUMN "spans"`);
  }
}

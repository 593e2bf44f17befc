import { MigrationInterface, QueryRunner } from 'typeorm';

/** Every run's trace (GET /traces) and its spans; deleted with terminal jobs past QUEUE_RETENTION_SECONDS. */
export class CreateTraces1765200000002 implements MigrationInterface {
  name = 'CreateTraces1765200000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "traces" (
      "trace_id" character varying(32) NOT NULL,
      "run_id" uuid NOT NULL,
      "session_id" character varying(128) NOT NULL,
      "user_id" character varying(255),
      "component_type" character varying(16) NOT NULL,
      "component_id" character varying(128) NOT NULL,
      "status" character varying(16) NOT NULL,
      "started_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      "ended_at" TIMESTAMP WITH TIME ZONE,
      CONSTRAINT "PK_traces" PRIMARY KEY ("trace_id"))`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_user_started" ON "traces" ("user_id", "started_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_started" ON "traces" ("started_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_run" ON "traces" ("run_id")`);
    await queryRunner.query(`CREATE INDEX "IDX_traces_session" ON "traces" ("session_id")`);
    await queryRunner.query(`CREATE TABLE "trace_spans" (
      "trace_id" character varying(32) NOT NULL,
      "span_id" character varying(16) NOT NULL,
      "parent_id" character varying(16),
      "name" character varying(128) NOT NULL,
      "started_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      "ended_at" TIMESTAMP WITH TIME ZONE NOT NULL,
      "attributes" jsonb NOT NULL DEFAULT '{}',
      CONSTRAINT "PK_trace_spans" PRIMARY KEY ("trace_id", "span_id"))`);
    await queryRunner.query(`CREATE INDEX "IDX_trace_spans_started" ON "trace_spans" ("started_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "trace_spans"`);
    await queryRunner.query(`DROP TABLE "traces"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateRunsAndQueue1764000000001 implements MigrationInterface {
  name = 'CreateRunsAndQueue1764000000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "sessions" (
        "id" varchar(128) NOT NULL,
        "component_type" varchar(16) NOT NULL,
        "component_id" varchar(128) NOT NULL,
        "user_id" varchar(255),
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_sessions" PRIMARY KEY ("id")
      )`);
    await queryRunner.query(`CREATE INDEX "IDX_sessions_user_created" ON "sessions" ("user_id", "created_at")`);

    await queryRunner.query(`
      CREATE TABLE "runs" (
        "id" uuid NOT NULL,
        "session_id" varchar(128) NOT NULL,
        "component_type" varchar(16) NOT NULL,
        "component_id" varchar(128) NOT NULL,
        "user_id" varchar(255),
        "background" boolean NOT NULL DEFAULT false,
        "status" varchar(16) NOT NULL,
        "message" text NOT NULL,
        "content" text,
        "error" text,
        "idempotency_key" varchar(512),
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        "completed_at" timestamptz,
        CONSTRAINT "PK_runs" PRIMARY KEY ("id")
      )`);
    await queryRunner.query(`CREATE INDEX "IDX_runs_session_created" ON "runs" ("session_id", "created_at")`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_runs_idempotency" ON "runs" ("user_id", "idempotency_key") NULLS NOT DISTINCT WHERE "idempotency_key" IS NOT NULL`,
    );

    await queryRunner.query(`
      CREATE TABLE "queue_jobs" (
        "id" uuid NOT NULL,
        "job_type" varchar(32) NOT NULL DEFAULT 'run',
        "component_type" varchar(16) NOT NULL,
        "component_id" varchar(128) NOT NULL,
        "session_id" varchar(128) NOT NULL,
        "user_id" varchar(255),
        "payload" jsonb NOT NULL,
        "status" varchar(16) NOT NULL DEFAULT 'queued',
        "attempt" integer NOT NULL DEFAULT 0,
        "max_attempts" integer NOT NULL DEFAULT 1,
        "idempotency_key" varchar(512),
        "available_at" timestamptz NOT NULL DEFAULT now(),
        "locked_by" varchar(128),
        "locked_at" timestamptz,
        "heartbeat_at" timestamptz,
        "error" text,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        "completed_at" timestamptz,
        CONSTRAINT "PK_queue_jobs" PRIMARY KEY ("id")
      )`);
    await queryRunner.query(
      `CREATE INDEX "IDX_queue_jobs_claimable" ON "queue_jobs" ("available_at", "created_at") WHERE "status" = 'queued'`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_queue_jobs_running_heartbeat" ON "queue_jobs" ("heartbeat_at") WHERE "status" = 'running'`);
    await queryRunner.query(`CREATE INDEX "IDX_queue_jobs_status_created" ON "queue_jobs" ("status", "created_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_queue_jobs_created" ON "queue_jobs" ("created_at")`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_queue_jobs_idempotency" ON "queue_jobs" ("user_id", "idempotency_key") NULLS NOT DISTINCT WHERE "idempotency_key" IS NOT NULL`,
    );

    await queryRunner.query(`
      CREATE TABLE "queue_cancellation_intents" (
        "run_id" uuid NOT NULL,
        "requested_at" timestamptz NOT NULL DEFAULT now(),
        "requested_by" varchar(255),
        CONSTRAINT "PK_queue_cancellation_intents" PRIMARY KEY ("run_id")
      )`);
    await queryRunner.query(`
      CREATE TABLE "queue_job_outcome_counters" (
        "outcome" varchar(16) NOT NULL,
        "total" bigint NOT NULL DEFAULT 0,
        CONSTRAINT "PK_queue_job_outcome_counters" PRIMARY KEY ("outcome")
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "queue_job_outcome_counters"`);
    await queryRunner.query(`DROP TABLE "queue_cancellation_intents"`);
    await queryRunner.query(`DROP TABLE "queue_jobs"`);
    await queryRunner.query(`DROP TABLE "runs"`);
    await queryRunner.query(`DROP TABLE "sessions"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateSchedules1764100000001 implements MigrationInterface {
  name = 'CreateSchedules1764100000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "schedules" (
        "id" uuid NOT NULL,
        "name" varchar(255) NOT NULL,
        "method" varchar(10) NOT NULL,
        "endpoint" varchar(512) NOT NULL,
        "cron_expr" varchar(128) NOT NULL,
        "timezone" varchar(64) NOT NULL,
        "timeout_seconds" integer NOT NULL,
        "max_retries" integer NOT NULL,
        "retry_delay_seconds" integer NOT NULL,
        "enabled" boolean NOT NULL,
        "user_id" varchar(255),
        "description" varchar(1024),
        "payload" jsonb,
        "next_run_at" timestamptz,
        "managed_by" varchar(64),
        "target_type" varchar(16),
        "target_id" varchar(128),
        "disabled_reason" varchar(255),
        "creator_kind" varchar(16) NOT NULL,
        "creator_id" varchar(255),
        "creator_scopes" text[] NOT NULL,
        "creator_service_account_id" uuid,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_schedules" PRIMARY KEY ("id")
      )`);
    // Names are unique per owner; NULL owners need their own index because NULLs never collide.
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_schedules_owner_name" ON "schedules" ("user_id", "name") WHERE "user_id" IS NOT NULL`);
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_schedules_unowned_name" ON "schedules" ("name") WHERE "user_id" IS NULL`);
    await queryRunner.query(`CREATE INDEX "IDX_schedules_due" ON "schedules" ("next_run_at") WHERE "enabled"`);
    await queryRunner.query(`CREATE INDEX "IDX_schedules_owner_created" ON "schedules" ("user_id", "created_at")`);

    await queryRunner.query(`
      CREATE TABLE "schedule_runs" (
        "id" uuid NOT NULL,
        "schedule_id" uuid NOT NULL,
        "trigger" varchar(16) NOT NULL,
        "status" varchar(16) NOT NULL,
        "due_at" timestamptz NOT NULL,
        "started_at" timestamptz,
        "completed_at" timestamptz,
        "locked_by" varchar(64),
        "deadline_at" timestamptz,
        "attempts" jsonb NOT NULL DEFAULT '[]',
        "status_code" integer,
        "error" text,
        "run_id" varchar(128),
        "run_status" varchar(32),
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_schedule_runs" PRIMARY KEY ("id"),
        CONSTRAINT "FK_schedule_runs_schedule" FOREIGN KEY ("schedule_id") REFERENCES "schedules" ("id") ON DELETE CASCADE
      )`);
    await queryRunner.query(`CREATE INDEX "IDX_schedule_runs_schedule_created" ON "schedule_runs" ("schedule_id", "created_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_schedule_runs_queued" ON "schedule_runs" ("due_at") WHERE "status" = 'queued'`);
    await queryRunner.query(
      `CREATE INDEX "IDX_schedule_runs_running_deadline" ON "schedule_runs" ("deadline_at") WHERE "status" = 'running'`,
    );

    await queryRunner.query(`
      CREATE TABLE "internal_secrets" (
        "name" varchar(64) NOT NULL,
        "value" text NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT "PK_internal_secrets" PRIMARY KEY ("name")
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "internal_secrets"`);
    await queryRunner.query(`DROP TABLE "schedule_runs"`);
    await queryRunner.query(`DROP TABLE "schedules"`);
  }
}

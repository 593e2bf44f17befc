import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a schedule does when a fire would overlap the previous one or slots were missed while no
 * worker ran, and why a fire was skipped. Existing schedules keep their behaviour: skip an overlap
 * never happened before only because fires were short, so `skip` and `once` are the defaults.
 */
export class SchedulePolicies1764600000001 implements MigrationInterface {
  name = 'SchedulePolicies1764600000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "schedules" ADD "overlap_policy" varchar(16) NOT NULL DEFAULT 'skip', ADD "catchup_policy" varchar(16) NOT NULL DEFAULT 'once',
         ADD "catchup_limit" integer NOT NULL DEFAULT 10, ALTER COLUMN "disabled_reason" TYPE varchar(500)`,
    );
    await queryRunner.query(`ALTER TABLE "schedule_runs" ADD "reason" varchar(16)`);
    // The overlap check looks for a schedule's fires in flight.
    await queryRunner.query(
      `CREATE INDEX "IDX_schedule_runs_schedule_running" ON "schedule_runs" ("schedule_id") WHERE "status" IN ('queued', 'running')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_schedule_runs_schedule_running"`);
    await queryRunner.query(`ALTER TABLE "schedule_runs" DROP COLUMN "reason"`);
    await queryRunner.query(
      `ALTER TABLE "schedules" DROP COLUMN "overlap_policy", DROP COLUMN "catchup_policy", DROP COLUMN "catchup_limit", ALTER COLUMN "disabled_reason" TYPE varchar(255)`,
    );
  }
}

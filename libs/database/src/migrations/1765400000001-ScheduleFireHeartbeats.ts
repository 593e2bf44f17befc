import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Schedule fires run on the queue engine: a worker heartbeats the fires it runs, and one whose
 * heartbeat is older than the lock grace lost its worker and is failed. That replaces the deadline
 * computed at claim from the schedule's timeouts, which left a lost fire running for as long as
 * every attempt could have taken. Fires running now get a heartbeat, so they are judged the new way.
 */
export class ScheduleFireHeartbeats1765400000001 implements MigrationInterface {
  name = 'ScheduleFireHeartbeats1765400000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "schedule_runs" ADD "heartbeat_at" timestamptz`);
    await queryRunner.query(`UPDATE "schedule_runs" SET "heartbeat_at" = now() WHERE "status" = 'running'`);
    await queryRunner.query(`DROP INDEX "IDX_schedule_runs_running_deadline"`);
    await queryRunner.query(`ALTER TABLE "schedule_runs" DROP COLUMN "deadline_at"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_schedule_runs_running_heartbeat" ON "schedule_runs" ("heartbeat_at") WHERE "status" = 'running'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_schedule_runs_running_heartbeat"`);
    await queryRunner.query(`ALTER TABLE "schedule_runs" ADD "deadline_at" timestamptz`);
    await queryRunner.query(`UPDATE "schedule_runs" SET "deadline_at" = "heartbeat_at" + interval '1 hour' WHERE "status" = 'running'`);
    await queryRunner.query(
      `CREATE INDEX "IDX_schedule_runs_running_deadline" ON "schedule_runs" ("deadline_at") WHERE "status" = 'running'`,
    );
    await queryRunner.query(`ALTER TABLE "schedule_runs" DROP COLUMN "heartbeat_at"`);
  }
}

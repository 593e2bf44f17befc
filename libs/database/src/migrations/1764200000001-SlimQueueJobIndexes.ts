import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every claim and every outcome rewrites a job row, and PostgreSQL adds an entry to each index
 * the new row version belongs to. Two list-only indexes cost ~20 µs of database CPU per job
 * (bench/RESULTS.md): the list now sorts by created_at without an index (it counts the whole
 * table for `meta` anyway), and only the statuses that wait for an operator (the dead-letter
 * list of failed and cancelled jobs, and paused ones) keep an index by status.
 */
export class SlimQueueJobIndexes1764200000001 implements MigrationInterface {
  name = 'SlimQueueJobIndexes1764200000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_created"`);
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_status_created"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_queue_jobs_dead_letter" ON "queue_jobs" ("status", "created_at") WHERE "status" IN ('failed', 'cancelled', 'paused')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_dead_letter"`);
    await queryRunner.query(`CREATE INDEX "IDX_queue_jobs_status_created" ON "queue_jobs" ("status", "created_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_queue_jobs_created" ON "queue_jobs" ("created_at")`);
  }
}

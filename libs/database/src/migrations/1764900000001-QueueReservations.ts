import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A worker may claim jobs ahead of a free slot (WORKER_PREFETCH): such a job stays `queued`, with
 * the worker's lock and heartbeat, and spends no attempt until its handler starts. The claim index
 * now leaves reserved jobs out, and the sweeper's index covers every locked job (running or
 * reserved), so a crashed worker's reservations go back to the queue as its running jobs are swept.
 */
export class QueueReservations1764900000001 implements MigrationInterface {
  name = 'QueueReservations1764900000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_claimable"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_queue_jobs_claimable" ON "queue_jobs" ("available_at", "created_at") WHERE "status" = 'queued' AND "locked_by" IS NULL`,
    );
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_running_heartbeat"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_queue_jobs_locked_heartbeat" ON "queue_jobs" ("heartbeat_at") WHERE "locked_by" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE "queue_jobs" SET "locked_by" = NULL, "locked_at" = NULL, "heartbeat_at" = NULL WHERE "status" = 'queued'`,
    );
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_locked_heartbeat"`);
    await queryRunner.query(`CREATE INDEX "IDX_queue_jobs_running_heartbeat" ON "queue_jobs" ("heartbeat_at") WHERE "status" = 'running'`);
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_claimable"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_queue_jobs_claimable" ON "queue_jobs" ("available_at", "created_at") WHERE "status" = 'queued'`,
    );
  }
}

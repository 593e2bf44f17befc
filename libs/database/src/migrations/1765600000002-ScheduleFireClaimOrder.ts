import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The fire claim takes queued fires in (due_at, id) order. Fires of one minute share their due time, so
 * with due_at alone in the index the claim sorted every queued fire, 1,000 after a busy minute, to take
 * the first few. With the id in it too, the claim reads the index in order and stops once it has enough.
 */
export class ScheduleFireClaimOrder1765600000002 implements MigrationInterface {
  name = 'ScheduleFireClaimOrder1765600000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await this.queuedIndex(queryRunner, '"due_at", "id"');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await this.queuedIndex(queryRunner, '"due_at"');
  }

  private async queuedIndex(queryRunner: QueryRunner, columns: string): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_schedule_runs_queued"`);
    await queryRunner.query(`CREATE INDEX "IDX_schedule_runs_queued" ON "schedule_runs" (${columns}) WHERE "status" = 'queued'`);
  }
}

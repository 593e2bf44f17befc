import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The overlap check asks, per schedule, for its latest finished fire (did it give up following a run
 * that is still going?). Without an index on the finish time it read the schedule's whole history to
 * sort it: with 1,000 finished fires per schedule (17 hours of a per-minute schedule), checking the
 * 500 schedules of one tick batch took 2-3 s, and every claim of a fire paid the same per candidate.
 * Fires are kept as the schedule's history, so that cost grew without bound. Read backwards, this index
 * answers with one entry.
 */
export class ScheduleFireLatestFinished1765800000001 implements MigrationInterface {
  name = 'ScheduleFireLatestFinished1765800000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_schedule_runs_schedule_finished" ON "schedule_runs" ("schedule_id", "completed_at") WHERE "status" IN ('success', 'failed')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_schedule_runs_schedule_finished"`);
  }
}

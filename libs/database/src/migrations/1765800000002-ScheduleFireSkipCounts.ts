import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `schedule_fires_skipped_total` on /metrics counted skipped fires in schedule_runs at every scrape,
 * on every api replica: a read of the whole fire history, which is kept. The totals are now kept by
 * reason (a fire skipped because its schedule was disabled first has none: `disabled`) as deltas,
 * appended by row triggers that fire only for rows becoming `skipped` and folded by the workers, as
 * the queue's counts are: appends never wait on each other, so two workers' ticks skipping fires for
 * different reasons at the same moment cannot deadlock on shared counter rows. A counter only grows:
 * deleting a schedule, and its history with it, takes nothing off.
 */
export class ScheduleFireSkipCounts1765800000002 implements MigrationInterface {
  name = 'ScheduleFireSkipCounts1765800000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "schedule_fire_skip_counts" ("id" bigserial PRIMARY KEY, "reason" varchar(32) NOT NULL, "delta" bigint NOT NULL)`,
    );
    await queryRunner.query(`
      CREATE FUNCTION schedule_runs_count_skip() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO schedule_fire_skip_counts (reason, delta) VALUES (COALESCE(NEW.reason, 'disabled'), 1);
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER schedule_runs_skip_insert AFTER INSERT ON schedule_runs FOR EACH ROW WHEN (NEW.status = 'skipped') EXECUTE FUNCTION schedule_runs_count_skip()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER schedule_runs_skip_update AFTER UPDATE ON schedule_runs FOR EACH ROW WHEN (NEW.status = 'skipped' AND OLD.status <> 'skipped') EXECUTE FUNCTION schedule_runs_count_skip()`,
    );
    // The starting totals, with writers held off so none is counted twice or missed.
    await queryRunner.query(`LOCK TABLE schedule_runs IN SHARE MODE`);
    await queryRunner.query(`INSERT INTO schedule_fire_skip_counts (reason, delta)
      SELECT COALESCE(reason, 'disabled'), count(*) FROM schedule_runs WHERE status = 'skipped' GROUP BY 1`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER schedule_runs_skip_update ON schedule_runs`);
    await queryRunner.query(`DROP TRIGGER schedule_runs_skip_insert ON schedule_runs`);
    await queryRunner.query(`DROP FUNCTION schedule_runs_count_skip()`);
    await queryRunner.query(`DROP TABLE "schedule_fire_skip_counts"`);
  }
}

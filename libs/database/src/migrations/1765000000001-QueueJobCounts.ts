import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Operator reads that cost the same at ten million jobs as at ten. Per-status counts are kept as
 * deltas, appended by statement-level triggers (one row per status a statement changes; appends
 * never wait on each other, unlike one counter row per status) and folded together by the worker
 * every second: `/queue/stats`, `/metrics` and the list's exact `total_count` sum a handful of rows.
 * The list's first page reads an index on created_at, and the oldest queued job a partial one.
 */
export class QueueJobCounts1765000000001 implements MigrationInterface {
  name = 'QueueJobCounts1765000000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "queue_job_counts" ("id" bigserial PRIMARY KEY, "status" varchar(16) NOT NULL, "delta" bigint NOT NULL)`,
    );
    await queryRunner.query(`
      CREATE FUNCTION queue_jobs_count_changes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO queue_job_counts (status, delta) SELECT status, count(*) FROM new_rows GROUP BY status;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO queue_job_counts (status, delta) SELECT status, -count(*) FROM old_rows GROUP BY status;
        ELSE
          INSERT INTO queue_job_counts (status, delta)
          SELECT status, sum(change) FROM (
            SELECT status, 1 AS change FROM new_rows UNION ALL SELECT status, -1 FROM old_rows
          ) AS changes GROUP BY status HAVING sum(change) <> 0;
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION queue_jobs_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM queue_job_counts;
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER queue_jobs_count_insert AFTER INSERT ON queue_jobs REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION queue_jobs_count_changes()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER queue_jobs_count_update AFTER UPDATE ON queue_jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION queue_jobs_count_changes()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER queue_jobs_count_delete AFTER DELETE ON queue_jobs REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION queue_jobs_count_changes()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER queue_jobs_count_truncate AFTER TRUNCATE ON queue_jobs FOR EACH STATEMENT EXECUTE FUNCTION queue_jobs_count_truncate()`,
    );
    // The starting counts, with writers held off so none is counted twice or missed.
    await queryRunner.query(`LOCK TABLE queue_jobs IN SHARE MODE`);
    await queryRunner.query(`INSERT INTO queue_job_counts (status, delta) SELECT status, count(*) FROM queue_jobs GROUP BY status`);
    await queryRunner.query(`CREATE INDEX "IDX_queue_jobs_created" ON "queue_jobs" ("created_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_queue_jobs_queued_created" ON "queue_jobs" ("created_at") WHERE "status" = 'queued'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_queued_created"`);
    await queryRunner.query(`DROP INDEX "IDX_queue_jobs_created"`);
    await queryRunner.query(`DROP TRIGGER queue_jobs_count_truncate ON queue_jobs`);
    await queryRunner.query(`DROP TRIGGER queue_jobs_count_delete ON queue_jobs`);
    await queryRunner.query(`DROP TRIGGER queue_jobs_count_update ON queue_jobs`);
    await queryRunner.query(`DROP TRIGGER queue_jobs_count_insert ON queue_jobs`);
    await queryRunner.query(`DROP FUNCTION queue_jobs_count_truncate()`);
    await queryRunner.query(`DROP FUNCTION queue_jobs_count_changes()`);
    await queryRunner.query(`DROP TABLE "queue_job_counts"`);
  }
}

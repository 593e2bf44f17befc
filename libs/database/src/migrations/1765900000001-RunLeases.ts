import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The leases of the runs an api executes itself (not background): a row while the api runs one, renewed
 * by it, so that a worker can fail the run once its api is gone. A table of its own, a row per run in
 * flight: an index on the runs table's status or updated_at would make every run's state change a
 * non-HOT update, writing all of its index entries again (a long session's history read slowed 10x).
 */
export class RunLeases1765900000001 implements MigrationInterface {
  name = 'RunLeases1765900000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "run_leases" ("run_id" uuid PRIMARY KEY, "renewed_at" timestamptz NOT NULL DEFAULT now())`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "run_leases"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The runs an api executes itself (not background) and still calls running: the worker's sweep reads them
 * by the age of their lease (updated_at, renewed by the api while it runs them) to fail those whose api
 * is gone. Built concurrently, outside a transaction, so a large runs table takes no write lock meanwhile
 * (the migration lock is taken by trying, so no waiting replica holds a transaction this build would wait for).
 */
export class SyncRunLeases1765900000001 implements MigrationInterface {
  name = 'SyncRunLeases1765900000001';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS "IDX_runs_sync_running" ON "runs" ("updated_at") WHERE status = 'running' AND NOT background`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Rollbacks may run in a transaction, where CONCURRENTLY cannot: dropping is quick either way.
    await queryRunner.query(`DROP INDEX IF EXISTS "IDX_runs_sync_running"`);
  }
}

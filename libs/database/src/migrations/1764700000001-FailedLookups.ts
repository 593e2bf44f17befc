import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Failed token lookups per client address, shared by every api replica (rate-limiter-flexible's
 * PostgreSQL store: its key, points consumed and window end in epoch milliseconds).
 */
export class FailedLookups1764700000001 implements MigrationInterface {
  name = 'FailedLookups1764700000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "failed_token_lookups" ("key" varchar(255) PRIMARY KEY, "points" integer NOT NULL DEFAULT 0, "expire" bigint)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "failed_token_lookups"`);
  }
}

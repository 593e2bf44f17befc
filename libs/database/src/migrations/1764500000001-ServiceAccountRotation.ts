import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Token rotation keeps the rotated-out token's hash until its grace ends, and the account body
 * shows the address of its last use. The partial index serves the second half of the token lookup.
 */
export class ServiceAccountRotation1764500000001 implements MigrationInterface {
  name = 'ServiceAccountRotation1764500000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "service_accounts" ADD "previous_token_hash" char(64), ADD "previous_token_expires_at" timestamptz, ADD "last_used_ip" varchar(64)`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_service_accounts_previous_token_hash" ON "service_accounts" ("previous_token_hash") WHERE "previous_token_hash" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_service_accounts_previous_token_hash"`);
    await queryRunner.query(
      `ALTER TABLE "service_accounts" DROP COLUMN "last_used_ip", DROP COLUMN "previous_token_expires_at", DROP COLUMN "previous_token_hash"`,
    );
  }
}

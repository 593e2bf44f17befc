import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Minting a name again used to mark an expired account of that name revoked, so the one-active-name
 * index would let the new one in. An expiry is not a revocation: the expired account now keeps
 * revoked_at null and records that it gave up its name in name_released_at instead.
 */
export class ServiceAccountNameRelease1764800000001 implements MigrationInterface {
  name = 'ServiceAccountNameRelease1764800000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "service_accounts" ADD "name_released_at" timestamptz`);
    await queryRunner.query(`DROP INDEX "UQ_service_accounts_active_name"`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_service_accounts_active_name" ON "service_accounts" ("name") WHERE "revoked_at" IS NULL AND "name_released_at" IS NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Back to one name per non-revoked row: a released expired account becomes revoked, as before.
    await queryRunner.query(
      `UPDATE "service_accounts" SET "revoked_at" = "name_released_at" WHERE "name_released_at" IS NOT NULL AND "revoked_at" IS NULL`,
    );
    await queryRunner.query(`DROP INDEX "UQ_service_accounts_active_name"`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_service_accounts_active_name" ON "service_accounts" ("name") WHERE "revoked_at" IS NULL`,
    );
    await queryRunner.query(`ALTER TABLE "service_accounts" DROP COLUMN "name_released_at"`);
  }
}

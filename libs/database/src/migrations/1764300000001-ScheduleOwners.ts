import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A schedule acts for its owner: the principal that created it, replaced by whoever changes it
 * later. The columns that recorded the creator's credential and scopes become the owner's, so
 * every stored schedule keeps exactly the rights it fired with before and never gains any.
 */
export class ScheduleOwners1764300000001 implements MigrationInterface {
  name = 'ScheduleOwners1764300000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "schedules" RENAME COLUMN "creator_kind" TO "owner_kind"`);
    await queryRunner.query(`ALTER TABLE "schedules" RENAME COLUMN "creator_id" TO "owner_id"`);
    await queryRunner.query(`ALTER TABLE "schedules" RENAME COLUMN "creator_scopes" TO "owner_scopes"`);
    await queryRunner.query(`ALTER TABLE "schedules" RENAME COLUMN "creator_service_account_id" TO "owner_service_account_id"`);
    // Reasons the service wrote name the owner now (`creator_revoked:sa:ci` → `owner_revoked:sa:ci`).
    await queryRunner.query(
      `UPDATE "schedules" SET "disabled_reason" = 'owner_' || substr("disabled_reason", 9) WHERE "disabled_reason" LIKE 'creator\\_%'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE "schedules" SET "disabled_reason" = 'creator_' || substr("disabled_reason", 7) WHERE "disabled_reason" LIKE 'owner\\_%'`,
    );
    await queryRunner.query(`ALTER TABLE "schedules" RENAME COLUMN "owner_service_account_id" TO "creator_service_account_id"`);
    await queryRunner.query(`ALTER TABLE "schedules" RENAME COLUMN "owner_scopes" TO "creator_scopes"`);
    await queryRunner.query(`ALTER TABLE "schedules" RENAME COLUMN "owner_id" TO "creator_id"`);
    await queryRunner.query(`ALTER TABLE "schedules" RENAME COLUMN "owner_kind" TO "creator_kind"`);
  }
}

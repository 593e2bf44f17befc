import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Which security key owns a schedule the key wrote: a fire acts as root, and rotating the key must revoke that
 * too. Schedules stored before this column stay null and are taken to be the current key's.
 */
export class ScheduleOwnerKeyFingerprint1766200000001 implements MigrationInterface {
  name = 'ScheduleOwnerKeyFingerprint1766200000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "schedules" ADD "owner_key_fingerprint" varchar(64)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "schedules" DROP COLUMN "owner_key_fingerprint"`);
  }
}

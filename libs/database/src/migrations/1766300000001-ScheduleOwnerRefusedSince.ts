import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Since when the api has refused a schedule owner's credential kind. A replica still on the previous release
 * (or settings) during a rolling update refuses what the new ones accept; the schedule is disabled only once
 * refusals outlast a rollout.
 */
export class ScheduleOwnerRefusedSince1766300000001 implements MigrationInterface {
  name = 'ScheduleOwnerRefusedSince1766300000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "schedules" ADD "owner_refused_since" timestamptz`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "schedules" DROP COLUMN "owner_refused_since"`);
  }
}

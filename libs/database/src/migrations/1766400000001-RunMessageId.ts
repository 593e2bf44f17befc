import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The id the client gave the message a run answers, when its protocol has one (A2A's `messageId`): a task's
 * history shows the client's message under the id the client made, as the protocol has it, not one of ours.
 */
export class RunMessageId1766400000001 implements MigrationInterface {
  name = 'RunMessageId1766400000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "runs" ADD "message_id" character varying(255)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "runs" DROP COLUMN "message_id"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/** What a model-backed run consumed, shown in the run body; null for every other run. */
export class RunModelUsage1764400000001 implements MigrationInterface {
  name = 'RunModelUsage1764400000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "runs" ADD "model" varchar(255), ADD "input_tokens" integer, ADD "output_tokens" integer`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "runs" DROP COLUMN "output_tokens", DROP COLUMN "input_tokens", DROP COLUMN "model"`);
  }
}

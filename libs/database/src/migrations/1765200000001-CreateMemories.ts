import { MigrationInterface, QueryRunner } from 'typeorm';

/** Facts components and clients keep about a user (GET /memories, ctx.memories). */
export class CreateMemories1765200000001 implements MigrationInterface {
  name = 'CreateMemories1765200000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "memories" (
      "id" uuid NOT NULL,
      "memory" text NOT NULL,
      "topics" character varying(100) array NOT NULL DEFAULT '{}',
      "user_id" character varying(255),
      "component_type" character varying(16),
      "component_id" character varying(128),
      "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
      CONSTRAINT "PK_memories" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE INDEX "IDX_memories_user_created" ON "memories" ("user_id", "created_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "memories"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * First pages that an index answers, however many rows are kept. Memories list newest-changed first
 * (GET /memories by default, and `ctx.memories.list()` inside every run that reads them), which only
 * a sort of all the user's memories answered. Sessions and memories listed across users (an admin, or
 * every caller while USER_ISOLATION is off) sorted the whole table. Sessions get no index on
 * updated_at: every run touches it, and an index would take those updates off the cheap in-page path.
 */
export class NewestFirstIndexes1765800000003 implements MigrationInterface {
  name = 'NewestFirstIndexes1765800000003';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "IDX_memories_user_updated" ON "memories" ("user_id", "updated_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_memories_updated" ON "memories" ("updated_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_sessions_created" ON "sessions" ("created_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_sessions_created"`);
    await queryRunner.query(`DROP INDEX "IDX_memories_updated"`);
    await queryRunner.query(`DROP INDEX "IDX_memories_user_updated"`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateServiceAccounts1763800000000 implements MigrationInterface {
  name = 'CreateServiceAccounts1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "service_accounts" (
        "id" uuid NOT NULL,
        "name" varchar(63) NOT NULL,
        "owner_id" varchar(255),
        "token_hash" char(64) NOT NULL,
        "token_prefix" varchar(16) NOT NULL,
        "scopes" text[] NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "expires_at" timestamptz,
        "last_used_at" timestamptz,
        "revoked_at" timestamptz,
        CONSTRAINT "PK_service_accounts" PRIMARY KEY ("id"),
        CONSTRAINT "UQ_service_accounts_token_hash" UNIQUE ("token_hash")
      )`);
    // One active account per name; a revoked name is free to mint again (rotation).
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_service_accounts_active_name" ON "service_accounts" ("name") WHERE "revoked_at" IS NULL`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_service_accounts_owner_created" ON "service_accounts" ("owner_id", "created_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "service_accounts"`);
  }
}

import { randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { createTestDatabase, migrate, query, undoMigrationsTo } from '../support/database';

describe('security: schedules stored before owners existed', () => {
  it('keep exactly the rights they fired with: the creator becomes the owner, nothing is widened', async () => {
    const databaseUrl = await createTestDatabase();
    undoMigrationsTo(databaseUrl, 'ScheduleOwners1764300000001');
    const left = (await query<{ name: string }>(databaseUrl, `SELECT name FROM migrations`)).map((row) => row.name);
    expect(left).toContain('SlimQueueJobIndexes1764200000001');
    expect(left).not.toContain('ScheduleOwners1764300000001');

    const accountId = randomUUID();
    const rows = [
      {
        id: randomUUID(),
        kind: 'service_account',
        creator: 'sa:ci',
        scopes: ['config:read', 'schedules:write'],
        account: accountId,
        reason: 'creator_revoked:sa:ci',
      },
      { id: randomUUID(), kind: 'jwt', creator: 'alice', scopes: ['agents:run'], account: null, reason: null },
      { id: randomUUID(), kind: 'security_key', creator: null, scopes: [], account: null, reason: null },
    ];
    for (const row of rows) {
      await query(
        databaseUrl,
        `INSERT INTO schedules (id, name, method, endpoint, cron_expr, timezone, timeout_seconds, max_retries, retry_delay_seconds, enabled,
           user_id, creator_kind, creator_id, creator_scopes, creator_service_account_id, disabled_reason)
         VALUES ($1::uuid, $1::text, 'GET', '/config', '0 0 1 1 *', 'UTC', 60, 0, 60, $6, $3, $2, $3, $4, $5, $7)`,
        [row.id, row.kind, row.creator, row.scopes, row.account, row.reason === null, row.reason],
      );
    }

    migrate(databaseUrl);
    const migrated = await query<Record<string, unknown>>(
      databaseUrl,
      `SELECT id, owner_kind, owner_id, owner_scopes, owner_service_account_id, disabled_reason, enabled FROM schedules ORDER BY owner_kind`,
    );
    expect(migrated).toEqual(
      expect.arrayContaining(
        rows.map((row) =>
          expect.objectContaining({
            id: row.id,
            owner_kind: row.kind,
            owner_id: row.creator,
            owner_scopes: row.scopes,
            owner_service_account_id: row.account,
            disabled_reason: row.reason?.replace('creator_', 'owner_') ?? null,
          }),
        ),
      ),
    );
    expect(migrated).toHaveLength(rows.length);
  });
});

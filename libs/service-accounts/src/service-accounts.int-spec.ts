import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { bootModule, ModuleOnDatabase, principals } from '../../../test/support/nest-module';
import { CreateServiceAccountDto } from './service-account.dto';
import { ServiceAccountErrorCode as Code } from './service-account.exception';
import { ServiceAccountVerifier } from './service-account-verifier';
import { ServiceAccountsModule } from './service-accounts.module';
import { ServiceAccountsService } from './service-accounts.service';

const DAY_S = 86_400;
const root = principals.securityKey();

function mintRequest(fields: Partial<CreateServiceAccountDto> & { name: string }): CreateServiceAccountDto {
  return Object.assign(new CreateServiceAccountDto(), fields);
}

function scopes(...names: string[]): CreateServiceAccountDto['scopes'] {
  return names.map((scope) => ({ scope, effect: 'allow' as const }));
}

// The minting and rotation rules of ServiceAccountsService, in process on a cloned database.
describe('ServiceAccountsService', () => {
  let app: ModuleOnDatabase;
  let accounts: ServiceAccountsService;
  let verifier: ServiceAccountVerifier;
  let counter = 0;
  const freshName = () => `int-${++counter}`;

  beforeAll(async () => {
    app = await bootModule({ imports: [ServiceAccountsModule] }, { SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '0' });
    accounts = app.get(ServiceAccountsService);
    verifier = app.get(ServiceAccountVerifier);
  });

  afterAll(async () => {
    await app?.close();
  });

  /** Moves an account's expiry (and, when given, a rotated-out token's grace) into the past. */
  async function expire(id: string, column: 'expires_at' | 'previous_token_expires_at' = 'expires_at'): Promise<void> {
    await app.sql(`UPDATE service_accounts SET ${column} = now() - interval '1 second' WHERE id = $1`, [id]);
  }

  describe('minting', () => {
    it('grants the default scopes for 90 days and answers the token once, storing only its hash', async () => {
      const before = Math.floor(Date.now() / 1000);
      const minted = await accounts.mint(root, mintRequest({ name: freshName() }));

      expect(minted.scopes).toEqual(['agents:run', 'teams:run', 'workflows:run', 'sessions:read', 'config:read']);
      expect(minted.principal).toBe(`sa:${minted.name}`);
      expect(minted.expires_at! - minted.created_at).toBe(90 * DAY_S);
      expect(minted.created_at).toBeGreaterThanOrEqual(before);
      expect(minted.token.startsWith(minted.token_prefix)).toBe(true);
      const [row] = await app.sql<{ token_hash: string }>('SELECT token_hash FROM service_accounts WHERE id = $1', [minted.id]);
      expect(row.token_hash).not.toContain(minted.token);
      await expect(verifier.verify(minted.token, 'int-spec')).resolves.toMatchObject({ outcome: 'ok' });
    });

    it('honours expires_in_days and never_expires (which wins over it), and de-duplicates scopes', async () => {
      const short = await accounts.mint(
        root,
        mintRequest({ name: freshName(), expires_in_days: 7, scopes: scopes('agents:read', 'agents:read') }),
      );
      const forever = await accounts.mint(root, mintRequest({ name: freshName(), expires_in_days: 7, never_expires: true }));

      expect(short.expires_at! - short.created_at).toBe(7 * DAY_S);
      expect(short.scopes).toEqual(['agents:read']);
      expect(forever.expires_at).toBeNull();
    });

    it('checks scopes in order: invalid (400), then privileged without the flag (400), then not held (403)', async () => {
      const writer = principals.jwt('alice', ['service_accounts:write', 'agents:run', 'sessions:write']);

      await expect(
        accounts.mint(writer, mintRequest({ name: freshName(), scopes: scopes('bogus', 'sessions:write') })),
      ).rejects.toMatchObject({
        code: Code.InvalidScopes,
        detail: 'Invalid scope(s): bogus',
      });
      await expect(
        accounts.mint(writer, mintRequest({ name: freshName(), scopes: scopes('sessions:write', 'teams:run') })),
      ).rejects.toMatchObject({ code: Code.PrivilegedNotAllowed });
      await expect(
        accounts.mint(
          writer,
          mintRequest({ name: freshName(), scopes: scopes('sessions:write', 'teams:run'), allow_privileged_scopes: true }),
        ),
      ).rejects.toMatchObject({ code: Code.CannotGrant, detail: 'Cannot grant scope(s) you do not hold: teams:run' });
      // Positive control: the same caller may grant what it holds.
      await expect(
        accounts.mint(
          writer,
          mintRequest({ name: freshName(), scopes: scopes('sessions:write', 'agents:run'), allow_privileged_scopes: true }),
        ),
      ).resolves.toMatchObject({ scopes: ['sessions:write', 'agents:run'], created_by: 'alice' });
    });

    it('refuses a caller without service_accounts:write whatever it holds', async () => {
      const reader = principals.jwt('bob', ['agents:run']);
      await expect(accounts.mint(reader, mintRequest({ name: freshName(), scopes: scopes('agents:run') }))).rejects.toMatchObject({
        code: Code.CannotGrant,
        detail: 'Insufficient permissions. Required scope(s): service_accounts:write',
      });
    });
  });

  describe('names', () => {
    it('an active name is taken (409); a revoked one can be minted again and the old row stays revoked', async () => {
      const name = freshName();
      const first = await accounts.mint(root, mintRequest({ name }));
      await expect(accounts.mint(root, mintRequest({ name }))).rejects.toMatchObject({ code: Code.NameTaken });

      await accounts.revoke(root, first.id);
      const second = await accounts.mint(root, mintRequest({ name }));

      expect(second.id).not.toBe(first.id);
      const rows = await app.sql<{ id: string; revoked: boolean }>(
        'SELECT id, revoked_at IS NOT NULL AS revoked FROM service_accounts WHERE name = $1 ORDER BY created_at',
        [name],
      );
      expect(rows).toEqual([
        { id: first.id, revoked: true },
        { id: second.id, revoked: false },
      ]);
    });

    it('an expired name is released for a new account without marking the expired one revoked', async () => {
      const name = freshName();
      const first = await accounts.mint(root, mintRequest({ name }));
      await expire(first.id);

      const second = await accounts.mint(root, mintRequest({ name }));

      const [old] = await app.sql<{ revoked_at: Date | null; name_released_at: Date | null }>(
        'SELECT revoked_at, name_released_at FROM service_accounts WHERE id = $1',
        [first.id],
      );
      expect(old.revoked_at).toBeNull();
      expect(old.name_released_at).not.toBeNull();
      await expect(accounts.standing(first.id)).resolves.toMatchObject({ state: 'expired' });
      await expect(accounts.standing(second.id)).resolves.toMatchObject({ state: 'active', principal: `sa:${name}` });
    });
  });

  describe('revoking', () => {
    it('is idempotent (the first revoked_at stays) and the token stops verifying at once', async () => {
      const minted = await accounts.mint(root, mintRequest({ name: freshName() }));
      const first = await accounts.revoke(root, minted.id);
      const again = await accounts.revoke(root, minted.id);

      expect(first.revoked_at).not.toBeNull();
      expect(again.revoked_at).toBe(first.revoked_at);
      await expect(verifier.verify(minted.token, 'int-spec')).resolves.toEqual({ outcome: 'invalid' });
    });

    it("answers 404 for another owner's account, so its id is not disclosed", async () => {
      const carol = principals.jwt('carol', ['service_accounts:write', 'agents:run']);
      const dave = { ...principals.jwt('dave', ['service_accounts:write']), selfScoped: true };
      const minted = await accounts.mint(carol, mintRequest({ name: freshName(), scopes: scopes('agents:run') }));

      await expect(accounts.revoke(dave, minted.id)).rejects.toMatchObject({ code: Code.NotFound });
      await expect(accounts.standing(minted.id)).resolves.toMatchObject({ state: 'active' });
    });
  });

  describe('rotation', () => {
    it('a new token works at once; the old one works through the grace and not after it', async () => {
      const minted = await accounts.mint(root, mintRequest({ name: freshName() }));
      const rotated = await accounts.rotate(root, minted.id, { grace_seconds: 3600 });

      expect(rotated.token).not.toBe(minted.token);
      expect(rotated.id).toBe(minted.id);
      await expect(verifier.verify(rotated.token, 'int-spec')).resolves.toMatchObject({ outcome: 'ok' });
      await expect(verifier.verify(minted.token, 'int-spec')).resolves.toMatchObject({ outcome: 'ok' });

      await expire(minted.id, 'previous_token_expires_at');
      await expect(verifier.verify(minted.token, 'int-spec')).resolves.toEqual({ outcome: 'invalid' });
      await expect(verifier.verify(rotated.token, 'int-spec')).resolves.toMatchObject({ outcome: 'ok' });
    });

    it('grace 0 ends the old token at once', async () => {
      const minted = await accounts.mint(root, mintRequest({ name: freshName() }));
      await accounts.rotate(root, minted.id, { grace_seconds: 0 });
      await expect(verifier.verify(minted.token, 'int-spec')).resolves.toEqual({ outcome: 'invalid' });
    });

    it('an old token never outlives the account, whatever the grace', async () => {
      const minted = await accounts.mint(root, mintRequest({ name: freshName() }));
      await accounts.rotate(root, minted.id, { grace_seconds: 86_400 });
      await app.sql(`UPDATE service_accounts SET expires_at = now() + interval '1 hour' WHERE id = $1`, [minted.id]);
      await expect(verifier.verify(minted.token, 'int-spec')).resolves.toMatchObject({ outcome: 'ok' });

      await expire(minted.id);
      await expect(verifier.verify(minted.token, 'int-spec')).resolves.toEqual({ outcome: 'invalid' });
    });

    it('refuses a revoked or an expired account (409 naming which), and an anonymous caller holds no scope to hand out', async () => {
      const revoked = await accounts.mint(root, mintRequest({ name: freshName() }));
      await accounts.revoke(root, revoked.id);
      const expired = await accounts.mint(root, mintRequest({ name: freshName() }));
      await expire(expired.id);
      const active = await accounts.mint(root, mintRequest({ name: freshName() }));

      await expect(accounts.rotate(root, revoked.id, {})).rejects.toMatchObject({
        code: Code.NotActive,
        detail: expect.stringContaining('is revoked'),
      });
      await expect(accounts.rotate(root, expired.id, {})).rejects.toMatchObject({
        code: Code.NotActive,
        detail: expect.stringContaining('is expired'),
      });
      // The routes refuse an anonymous caller first (401); past them it would still get nothing.
      await expect(accounts.rotate(principals.anonymous(), active.id, {})).rejects.toMatchObject({ code: Code.CannotGrant });
      await expect(accounts.mint(principals.anonymous(), mintRequest({ name: freshName() }))).rejects.toMatchObject({
        code: Code.CannotGrant,
      });
    });

    it('needs every scope the account carries, as minting does', async () => {
      // Erin minted it while her JWT held both scopes; it holds fewer now.
      const erin = principals.jwt('erin', ['service_accounts:write', 'agents:run', 'teams:run']);
      const minted = await accounts.mint(erin, mintRequest({ name: freshName(), scopes: scopes('teams:run', 'agents:run') }));
      const narrower = principals.jwt('erin', ['service_accounts:write', 'agents:run']);
      await expect(accounts.rotate(narrower, minted.id, {})).rejects.toMatchObject({
        code: Code.CannotGrant,
        detail: 'Cannot grant scope(s) you do not hold: teams:run',
      });
    });

    it("is for the account's minter or an admin only, like revoking: anyone else acting on it would act as it", async () => {
      const minted = await accounts.mint(
        principals.jwt('frank', ['service_accounts:write', 'agents:run']),
        mintRequest({ name: freshName(), scopes: scopes('agents:run') }),
      );
      const grace = principals.jwt('grace', ['service_accounts:write', 'agents:run']);
      await expect(accounts.rotate(grace, minted.id, {})).rejects.toMatchObject({ code: Code.NotOwner });
      await expect(accounts.revoke(grace, minted.id)).rejects.toMatchObject({ code: Code.NotOwner });
      await expect(
        accounts.rotate(principals.jwt('frank', ['service_accounts:write', 'agents:run']), minted.id, {}),
      ).resolves.toMatchObject({ id: minted.id });
      await expect(accounts.revoke(root, minted.id)).resolves.toMatchObject({ id: minted.id, revoked_at: expect.any(Number) });
    });
  });
});

// The verifier's cache on the replica that revokes: the revoke holds there at once.
describe('ServiceAccountVerifier with its cache', () => {
  let app: ModuleOnDatabase;
  let accounts: ServiceAccountsService;
  let verifier: ServiceAccountVerifier;

  beforeAll(async () => {
    app = await bootModule({ imports: [ServiceAccountsModule] }, { SERVICE_ACCOUNT_CACHE_TTL_SECONDS: '30' });
    accounts = app.get(ServiceAccountsService);
    verifier = app.get(ServiceAccountVerifier);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('caches a verified token, and forgets it when this replica revokes the account', async () => {
    const minted = await accounts.mint(root, mintRequest({ name: 'cached-revoked' }));
    expect((await verifier.verify(minted.token, 'client')).outcome).toBe('ok');
    await app.sql('UPDATE service_accounts SET scopes = ARRAY[]::text[] WHERE id = $1', [minted.id]);
    // A cache hit: the scopes as verified before.
    expect(await verifier.verify(minted.token, 'client')).toMatchObject({ outcome: 'ok', account: { scopes: minted.scopes } });
    await accounts.revoke(root, minted.id);
    expect((await verifier.verify(minted.token, 'client')).outcome).toBe('invalid');
  });

  it('does not cache a lookup that was on its way when the account was forgotten (a revoke racing a request)', async () => {
    const minted = await accounts.mint(root, mintRequest({ name: 'cache-race' }));
    const inFlight = verifier.verify(minted.token, 'client');
    // As a revoke on this replica does once its row is written, while that lookup may have read the row before.
    verifier.forget(minted.id);
    expect((await inFlight).outcome).toBe('ok');
    await app.sql('UPDATE service_accounts SET revoked_at = now() WHERE id = $1', [minted.id]);
    expect((await verifier.verify(minted.token, 'client')).outcome).toBe('invalid');
  });
});

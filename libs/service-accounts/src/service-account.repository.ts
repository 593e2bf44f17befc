import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';

import { DataScope, SERVICE_ACCOUNT_PREFIX } from '@app/access';
import { fetchPage, PageRequest } from '@app/pagination';

import { ServiceAccountEntity } from './service-account.entity';

export const SERVICE_ACCOUNT_SORT_FIELDS = ['created_at', 'name', 'last_used_at', 'expires_at'] as const;
export type ServiceAccountSortField = (typeof SERVICE_ACCOUNT_SORT_FIELDS)[number];

const SORT_PROPERTIES: Record<ServiceAccountSortField, keyof ServiceAccountEntity> = {
  created_at: 'createdAt',
  name: 'name',
  last_used_at: 'lastUsedAt',
  expires_at: 'expiresAt',
};

export const ACTIVE_NAME_CONSTRAINT = 'UQ_service_accounts_active_name';

/**
 * See revokeWithMinted. A child of `minter` has the owner `sa:<minter's name>` and was minted after the minter
 * and before any later account of that name.
 */
const REVOKE_WITH_MINTED = `
  WITH RECURSIVE minted (id, name, created_at) AS (
    SELECT id, name, created_at FROM service_accounts WHERE id = $1
    UNION
    SELECT child.id, child.name, child.created_at
      FROM service_accounts child JOIN minted minter ON child.owner_id = '${SERVICE_ACCOUNT_PREFIX}' || minter.name
     WHERE child.created_at >= minter.created_at
       AND NOT EXISTS (SELECT 1 FROM service_accounts later
                        WHERE later.name = minter.name AND later.created_at > minter.created_at AND later.created_at <= child.created_at)
  )
  UPDATE service_accounts SET revoked_at = now()
   WHERE id IN (SELECT id FROM minted) AND revoked_at IS NULL
  RETURNING id`;

/** Every read takes the caller's DataScope first; the token-hash lookup is the one unscoped read (it is authentication). */
@Injectable()
export class ServiceAccountRepository {
  constructor(@InjectRepository(ServiceAccountEntity) private readonly rows: Repository<ServiceAccountEntity>) {}

  /**
   * Stores a new account. One minted by a service account's token is stored only while that account is still
   * active in the database (a token cached by a replica may outlive its revocation by the cache TTL): false
   * otherwise. The minter's row is share-locked until the insert commits, so a revoke waits for it and its
   * cascade sees the new account.
   */
  async insert(account: ServiceAccountEntity, minterId: string | null): Promise<boolean> {
    return this.rows.manager.transaction(async (manager) => {
      if (minterId !== null) {
        const active: unknown[] = await manager.query(
          `SELECT id FROM service_accounts WHERE id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) FOR SHARE`,
          [minterId],
        );
        if (active.length === 0) {
          return false;
        }
      }
      await manager.insert(ServiceAccountEntity, account);
      return true;
    });
  }

  /** The account whose current token, or whose rotated-out token, has this hash (the caller checks that token's grace). */
  findByTokenHash(tokenHash: string): Promise<ServiceAccountEntity | null> {
    return this.rows.findOne({ where: [{ tokenHash }, { previousTokenHash: tokenHash }] });
  }

  async findById(scope: DataScope, id: string): Promise<ServiceAccountEntity | null> {
    const account = await this.rows.findOneBy({ id });
    return account && scope.includes(account.ownerId) ? account : null;
  }

  async page(
    scope: DataScope,
    request: PageRequest<ServiceAccountSortField>,
    includeRevoked: boolean,
  ): Promise<[ServiceAccountEntity[], number]> {
    const owner = scope.where('account.owner_id');
    const query = this.rows.createQueryBuilder('account').where(owner.sql, owner.params);
    if (!includeRevoked) {
      query.andWhere('account.revoked_at IS NULL');
    }
    return fetchPage(query, request, { sort: `account.${SORT_PROPERTIES[request.sortBy]}`, id: 'account.id' });
  }

  /** Who minted the latest account named `name` (null: the security key, or anyone on an open instance); undefined if none was. */
  async lastOwnerOfName(name: string): Promise<string | null | undefined> {
    // The id too: TypeORM makes no entity of a row whose selected columns are all null, and the security key's
    // accounts have no owner, so their names read as never used.
    const latest = await this.rows.findOne({ where: { name }, order: { createdAt: 'DESC' }, select: { id: true, ownerId: true } });
    return latest === null ? undefined : latest.ownerId;
  }

  /**
   * Revokes the account and every account minted with it, theirs too, on down; returns the ids this call
   * revoked (a second revoke keeps the first timestamp). A child is known by its owner, `sa:<name>`, and by
   * when it was minted: a name outlives its accounts, and a child minted after a later account of that name
   * took it belongs to that one. Repeated until a pass finds nothing: a pass waits on the rows it revokes (a
   * mint holds its minter's row), and an account minted by one of them meanwhile is seen by the next.
   */
  revokeWithMinted(id: string): Promise<string[]> {
    return this.rows.manager.transaction(async (manager) => {
      // Waits for a mint this account is making (it holds the row for share): its account is seen below.
      await manager.query(`SELECT id FROM service_accounts WHERE id = $1 FOR UPDATE`, [id]);
      const revoked: string[] = [];
      for (;;) {
        const [rows]: [{ id: string }[], number] = await manager.query(REVOKE_WITH_MINTED, [id]);
        if (rows.length === 0) {
          return revoked;
        }
        revoked.push(...rows.map((row) => row.id));
      }
    });
  }

  /** An expired account that still holds `name` lets it go; it stays expired, not revoked. */
  async releaseExpiredName(name: string): Promise<void> {
    await this.rows
      .createQueryBuilder()
      .update()
      .set({ nameReleasedAt: () => 'now()' })
      .where('name = :name AND revoked_at IS NULL AND name_released_at IS NULL AND expires_at <= now()', { name })
      .execute();
  }

  /**
   * Swaps in a new token and keeps the current one's hash until `previousExpiresAt`. One statement, fenced
   * on the account still being active: false when it was revoked or has expired (or is gone).
   */
  async rotate(id: string, next: { tokenHash: string; tokenPrefix: string }, previousExpiresAt: Date): Promise<boolean> {
    const result = await this.rows
      .createQueryBuilder()
      .update()
      .set({
        // SET reads the row as it was: the previous hash is the token being replaced.
        previousTokenHash: () => 'token_hash',
        previousTokenExpiresAt: previousExpiresAt,
        tokenHash: next.tokenHash,
        tokenPrefix: next.tokenPrefix,
      })
      .where('id = :id AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())', { id })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  async touchLastUsed(id: string, clientIp: string): Promise<void> {
    await this.rows.update({ id }, { lastUsedAt: () => 'now()', lastUsedIp: clientIp.slice(0, 64) });
  }
}

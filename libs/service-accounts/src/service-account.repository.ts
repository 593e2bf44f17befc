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

/** Every read takes the caller's DataScope first; the token-hash lookup is the one unscoped read (it is authentication). */
@Injectable()
export class ServiceAccountRepository {
  constructor(@InjectRepository(ServiceAccountEntity) private readonly rows: Repository<ServiceAccountEntity>) {}

  async insert(account: ServiceAccountEntity): Promise<void> {
    await this.rows.insert(account);
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
    const latest = await this.rows.findOne({ where: { name }, order: { createdAt: 'DESC' }, select: { ownerId: true } });
    return latest === null ? undefined : latest.ownerId;
  }

  /**
   * Revokes the account and every active account minted under it (owner `sa:<name>`), theirs too, on down.
   * Sets revoked_at once: a second revoke keeps the first timestamp. Returns the ids this call revoked.
   */
  async revokeWithMinted(id: string): Promise<string[]> {
    const [rows]: [{ id: string }[], number] = await this.rows.query(
      `WITH RECURSIVE minted (id, name) AS (
         SELECT id, name FROM service_accounts WHERE id = $1
         UNION
         SELECT account.id, account.name FROM service_accounts account JOIN minted ON account.owner_id = '${SERVICE_ACCOUNT_PREFIX}' || minted.name
         WHERE account.revoked_at IS NULL
       )
       UPDATE service_accounts SET revoked_at = now() WHERE id IN (SELECT id FROM minted) AND revoked_at IS NULL RETURNING id`,
      [id],
    );
    return rows.map((row) => row.id);
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

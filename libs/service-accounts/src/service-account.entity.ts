import { Column, Entity, Index, PrimaryColumn, Unique } from 'typeorm';

@Entity('service_accounts')
@Unique('UQ_service_accounts_token_hash', ['tokenHash'])
// One account holds a name; a revoked one, or an expired one whose name was minted again, has let it go.
@Index('UQ_service_accounts_active_name', ['name'], { unique: true, where: '"revoked_at" IS NULL AND "name_released_at" IS NULL' })
@Index('IDX_service_accounts_owner_created', ['ownerId', 'createdAt'])
@Index('IDX_service_accounts_previous_token_hash', ['previousTokenHash'], { where: '"previous_token_hash" IS NOT NULL' })
export class ServiceAccountEntity {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ type: 'varchar', length: 63 })
  name!: string;

  /** The principal that minted the account (JWT sub or `sa:<name>`); null for the security key. */
  @Column({ name: 'owner_id', type: 'varchar', length: 255, nullable: true })
  ownerId!: string | null;

  @Column({ name: 'token_hash', type: 'char', length: 64 })
  tokenHash!: string;

  @Column({ name: 'token_prefix', type: 'varchar', length: 16 })
  tokenPrefix!: string;

  /** The token a rotation replaced: still accepted until previous_token_expires_at (its grace). */
  @Column({ name: 'previous_token_hash', type: 'char', length: 64, nullable: true })
  previousTokenHash!: string | null;

  @Column({ name: 'previous_token_expires_at', type: 'timestamptz', nullable: true })
  previousTokenExpiresAt!: Date | null;

  @Column({ type: 'text', array: true })
  scopes!: string[];

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt!: Date | null;

  /** The client address of the last successful use, written with last_used_at. */
  @Column({ name: 'last_used_ip', type: 'varchar', length: 64, nullable: true })
  lastUsedIp!: string | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;

  /** When the name was minted again after this account expired: it no longer holds the name (not revoked). */
  @Column({ name: 'name_released_at', type: 'timestamptz', nullable: true })
  nameReleasedAt!: Date | null;
}

import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import { CredentialKind } from '@app/access';

export const OVERLAP_POLICIES = ['skip', 'allow', 'buffer_one'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
export const CATCHUP_POLICIES = ['once', 'skip', 'all'] as const;
export type CatchupPolicy = (typeof CATCHUP_POLICIES)[number];

/** A free-form JSON object (`payload`); its values are opaque to the service. */
export type JsonObject = { [key: string]: string | number | boolean | null | object };

@Entity('schedules')
// Names are unique per owner (two partial indexes because NULL owners never collide in a plain one).
@Index('UQ_schedules_owner_name', ['userId', 'name'], { unique: true, where: '"user_id" IS NOT NULL' })
@Index('UQ_schedules_unowned_name', ['name'], { unique: true, where: '"user_id" IS NULL' })
// The tick's claim: enabled schedules by next_run_at.
@Index('IDX_schedules_due', ['nextRunAt'], { where: '"enabled"' })
@Index('IDX_schedules_owner_created', ['userId', 'createdAt'])
export class ScheduleEntity {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  @Column({ type: 'varchar', length: 10 })
  method!: string;

  @Column({ type: 'varchar', length: 512 })
  endpoint!: string;

  @Column({ name: 'cron_expr', type: 'varchar', length: 128 })
  cronExpr!: string;

  @Column({ type: 'varchar', length: 64 })
  timezone!: string;

  @Column({ name: 'timeout_seconds', type: 'integer' })
  timeoutSeconds!: number;

  @Column({ name: 'max_retries', type: 'integer' })
  maxRetries!: number;

  @Column({ name: 'retry_delay_seconds', type: 'integer' })
  retryDelaySeconds!: number;

  @Column({ type: 'boolean' })
  enabled!: boolean;

  /** Who the schedule belongs to, for self-scoping: its creator's principal, or a user_id an admin named. */
  @Column({ name: 'user_id', type: 'varchar', length: 255, nullable: true })
  userId!: string | null;

  @Column({ type: 'varchar', length: 1024, nullable: true })
  description!: string | null;

  @Column({ type: 'jsonb', nullable: true })
  payload!: JsonObject | null;

  /** Null while disabled. */
  @Column({ name: 'next_run_at', type: 'timestamptz', nullable: true })
  nextRunAt!: Date | null;

  @Column({ name: 'managed_by', type: 'varchar', length: 64, nullable: true })
  managedBy!: string | null;

  @Column({ name: 'target_type', type: 'varchar', length: 16, nullable: true })
  targetType!: string | null;

  @Column({ name: 'target_id', type: 'varchar', length: 128, nullable: true })
  targetId!: string | null;

  @Column({ name: 'disabled_reason', type: 'varchar', length: 500, nullable: true })
  disabledReason!: string | null;

  /** What a fire does while the previous one is still in flight (OVERLAP_POLICIES). */
  @Column({ name: 'overlap_policy', type: 'varchar', length: 16, default: 'skip' })
  overlapPolicy!: OverlapPolicy;

  /** What happens to slots missed while no worker ran (CATCHUP_POLICIES). */
  @Column({ name: 'catchup_policy', type: 'varchar', length: 16, default: 'once' })
  catchupPolicy!: CatchupPolicy;

  /** With catchup_policy `all`: the most missed slots fired on recovery. */
  @Column({ name: 'catchup_limit', type: 'integer', default: 10 })
  catchupLimit!: number;

  /**
   * The owner: whoever created the schedule or changed it last. Every fire acts with the owner's
   * credential kind and scopes as recorded then, narrowed at fire time to what the owner still holds.
   */
  @Column({ name: 'owner_kind', type: 'varchar', length: 16 })
  ownerKind!: CredentialKind;

  /** The owner's principal (JWT sub or `sa:<name>`); null for the security key and anonymous callers. */
  @Column({ name: 'owner_id', type: 'varchar', length: 255, nullable: true })
  ownerId!: string | null;

  @Column({ name: 'owner_scopes', type: 'text', array: true })
  ownerScopes!: string[];

  /** Set when the owner is a service account: its revocation or expiry disables the schedule. */
  @Column({ name: 'owner_service_account_id', type: 'uuid', nullable: true })
  ownerServiceAccountId!: string | null;

  /**
   * Set when the owner is the security key: which key (see securityKeyFingerprint). A fire after the key was
   * rotated is refused. Null for other owners, and for schedules a release without it stored.
   */
  @Column({ name: 'owner_key_fingerprint', type: 'varchar', length: 64, nullable: true })
  ownerKeyFingerprint!: string | null;

  /**
   * Since when fires have been refused because this instance does not accept the owner's kind of credential
   * (see OWNER_REFUSAL_GRACE_SECONDS); null once a fire is accepted.
   */
  @Column({ name: 'owner_refused_since', type: 'timestamptz', nullable: true })
  ownerRefusedSince!: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}

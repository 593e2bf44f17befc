import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { JobStatus } from './job-status';

/** Serialized parameters of the work: flat JSON, e.g. a run's `{message}`. */
export type JobPayload = Record<string, string | number | boolean | null>;

@Entity('queue_jobs')
// The claim query: oldest claimable first, among queued jobs no worker has reserved.
@Index('IDX_queue_jobs_claimable', ['availableAt', 'createdAt'], { where: `"status" = 'queued' AND "locked_by" IS NULL` })
// The sweeper: locked jobs (running, or reserved by a worker's prefetch) by heartbeat age.
@Index('IDX_queue_jobs_locked_heartbeat', ['heartbeatAt'], { where: `"locked_by" IS NOT NULL` })
// The operator's list, first page by creation time; and the oldest queued job, for /queue/stats.
@Index('IDX_queue_jobs_created', ['createdAt'])
@Index('IDX_queue_jobs_queued_created', ['createdAt'], { where: `"status" = 'queued'` })
// The statuses that wait for an operator: the dead-letter list (failed, cancelled) and paused jobs.
@Index('IDX_queue_jobs_dead_letter', ['status', 'createdAt'], { where: `"status" IN ('failed', 'cancelled', 'paused')` })
// Idempotency keys are unique per caller, anonymous callers (NULL user) included: the migration
// creates it NULLS NOT DISTINCT, which TypeORM cannot express, so it is not synchronised from here.
@Index('UQ_queue_jobs_idempotency', { synchronize: false })
export class QueueJobEntity {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ name: 'job_type', type: 'varchar', length: 32, default: 'run' })
  jobType!: string;

  @Column({ name: 'component_type', type: 'varchar', length: 16 })
  componentType!: string;

  @Column({ name: 'component_id', type: 'varchar', length: 128 })
  componentId!: string;

  @Column({ name: 'session_id', type: 'varchar', length: 128 })
  sessionId!: string;

  @Column({ name: 'user_id', type: 'varchar', length: 255, nullable: true })
  userId!: string | null;

  @Column({ type: 'jsonb' })
  payload!: JobPayload;

  @Column({ type: 'varchar', length: 16, default: 'queued' })
  status!: JobStatus;

  @Column({ type: 'int', default: 0 })
  attempt!: number;

  @Column({ name: 'max_attempts', type: 'int', default: 1 })
  maxAttempts!: number;

  @Column({ name: 'idempotency_key', type: 'varchar', length: 512, nullable: true })
  idempotencyKey!: string | null;

  @Column({ name: 'available_at', type: 'timestamptz', default: () => 'now()' })
  availableAt!: Date;

  /** The worker running the job, or holding a `queued` one it claimed ahead of a free slot (not yet started). */
  @Column({ name: 'locked_by', type: 'varchar', length: 128, nullable: true })
  lockedBy!: string | null;

  @Column({ name: 'locked_at', type: 'timestamptz', nullable: true })
  lockedAt!: Date | null;

  /** Renewed by the worker every third of the lock grace; an older one gets the job swept. */
  @Column({ name: 'heartbeat_at', type: 'timestamptz', nullable: true })
  heartbeatAt!: Date | null;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt!: Date | null;
}

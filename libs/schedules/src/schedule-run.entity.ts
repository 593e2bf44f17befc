import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';

import { ScheduleEntity } from './schedule.entity';

/** Why a fire did not happen: its previous fire was in flight, its slot was missed, or one was already waiting. */
export const SKIP_REASONS = ['overlap', 'missed', 'buffer_full'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];
/** How skipped fires are counted (/metrics): by policy reason, and `disabled` for a fire whose schedule was disabled before it started (it has none). */
export const COUNTED_SKIP_REASONS = [...SKIP_REASONS, 'disabled'] as const;

export type ScheduleRunTrigger = 'cron' | 'manual';
export type ScheduleRunStatus = 'queued' | 'running' | 'success' | 'failed' | 'skipped';

/** One HTTP call of a fire; a fire makes 1 + max_retries of them at most. */
export interface ScheduleAttempt {
  attempt: number;
  started_at: number;
  completed_at: number;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  run_id: string | null;
  run_status: string | null;
}

/** One fire of a schedule (a cron tick or a manual trigger) and every attempt it made. */
@Entity('schedule_runs')
@Index('IDX_schedule_runs_schedule_created', ['scheduleId', 'createdAt'])
// The worker's claim: queued fires, oldest slot first.
@Index('IDX_schedule_runs_queued', ['dueAt', 'id'], { where: `"status" = 'queued'` })
// The sweep of fires whose worker died.
@Index('IDX_schedule_runs_running_heartbeat', ['heartbeatAt'], { where: `"status" = 'running'` })
// The overlap check: a schedule's fires in flight.
@Index('IDX_schedule_runs_schedule_running', ['scheduleId'], { where: `"status" IN ('queued', 'running')` })
// The overlap check: a schedule's latest finished fire, read without its history.
@Index('IDX_schedule_runs_schedule_finished', ['scheduleId', 'completedAt'], { where: `"status" IN ('success', 'failed')` })
export class ScheduleRunEntity {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ name: 'schedule_id', type: 'uuid' })
  scheduleId!: string;

  @ManyToOne(() => ScheduleEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'schedule_id', foreignKeyConstraintName: 'FK_schedule_runs_schedule' })
  schedule?: ScheduleEntity;

  @Column({ type: 'varchar', length: 16 })
  trigger!: ScheduleRunTrigger;

  @Column({ type: 'varchar', length: 16 })
  status!: ScheduleRunStatus;

  /** The cron slot this fire is for, or the time a manual trigger was accepted. */
  @Column({ name: 'due_at', type: 'timestamptz' })
  dueAt!: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt!: Date | null;

  @Column({ name: 'locked_by', type: 'varchar', length: 64, nullable: true })
  lockedBy!: string | null;

  /** Renewed by the worker running the fire; older than the lock grace: that worker was lost. */
  @Column({ name: 'heartbeat_at', type: 'timestamptz', nullable: true })
  heartbeatAt!: Date | null;

  @Column({ type: 'jsonb', default: () => `'[]'` })
  attempts!: ScheduleAttempt[];

  /** Why a policy skipped this fire (SKIP_REASONS); null otherwise. */
  @Column({ type: 'varchar', length: 16, nullable: true })
  reason!: SkipReason | null;

  @Column({ name: 'status_code', type: 'integer', nullable: true })
  statusCode!: number | null;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  /** The run the endpoint started, when it answered with one. */
  @Column({ name: 'run_id', type: 'varchar', length: 128, nullable: true })
  runId!: string | null;

  @Column({ name: 'run_status', type: 'varchar', length: 32, nullable: true })
  runStatus!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;
}

import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

import type { QueueJobEntity } from '@app/queue';

import type { RunStatus } from './run-status';

@Entity('runs')
@Index('IDX_runs_session_created', ['sessionId', 'createdAt'])
// Idempotency keys are unique per caller, anonymous callers (NULL user) included: the migration
// creates it NULLS NOT DISTINCT, which TypeORM cannot express, so it is not synchronised from here.
@Index('UQ_runs_idempotency', { synchronize: false })
// Partial (traced runs only), which the migration writes and TypeORM would not compare alike.
@Index('IDX_runs_trace', { synchronize: false })
@Index('IDX_runs_traced_created', { synchronize: false })
@Index('IDX_runs_traced_user_created', { synchronize: false })
export class RunEntity {
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ name: 'session_id', type: 'varchar', length: 128 })
  sessionId!: string;

  @Column({ name: 'component_type', type: 'varchar', length: 16 })
  componentType!: string;

  @Column({ name: 'component_id', type: 'varchar', length: 128 })
  componentId!: string;

  @Column({ name: 'user_id', type: 'varchar', length: 255, nullable: true })
  userId!: string | null;

  /** True when the run was handed to the queue: its job is then the authority on status. */
  @Column({ type: 'boolean', default: false })
  background!: boolean;

  @Column({ type: 'varchar', length: 16 })
  status!: RunStatus;

  @Column({ type: 'text' })
  message!: string;

  @Column({ type: 'text', nullable: true })
  content!: string | null;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  /** The model a model-backed component called, and what that cost (null for other components). */
  @Column({ type: 'varchar', length: 255, nullable: true })
  model!: string | null;

  @Column({ name: 'input_tokens', type: 'integer', nullable: true })
  inputTokens!: number | null;

  @Column({ name: 'output_tokens', type: 'integer', nullable: true })
  outputTokens!: number | null;

  @Column({ name: 'idempotency_key', type: 'varchar', length: 512, nullable: true })
  idempotencyKey!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt!: Date | null;

  /** The id the client gave its message, when its protocol has one (A2A's `messageId`); read by A2A alone. */
  @Column({ name: 'message_id', type: 'varchar', length: 255, nullable: true, select: false })
  messageId?: string | null;

  /** The run's trace (W3C trace id) when it was traced: its row is the trace's summary in GET /traces. */
  @Column({ name: 'trace_id', type: 'varchar', length: 32, nullable: true, select: false })
  traceId?: string | null;

  /** The run's request span (JSON), written with the row. */
  @Column({ name: 'request_span', type: 'text', nullable: true, select: false })
  requestSpan?: string | null;

  /** The run's own spans, written with its outcome: a JSON array of spans per execution. */
  @Column({ name: 'spans', type: 'text', array: true, nullable: true, select: false })
  spans?: string[] | null;

  /** The run's queue job (same id), joined on reads of background runs; not a column. */
  job?: RunJobState | null;
}

/** What a background run's job says of it: the authority on its state. */
export type RunJobState = Pick<QueueJobEntity, 'status' | 'error' | 'updatedAt' | 'completedAt'>;

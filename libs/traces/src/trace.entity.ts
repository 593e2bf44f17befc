import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** One run's trace: the summary GET /traces lists; its spans are TraceSpanEntity rows. */
@Entity('traces')
@Index('IDX_traces_user_started', ['userId', 'startedAt'])
@Index('IDX_traces_started', ['startedAt'])
@Index('IDX_traces_run', ['runId'])
@Index('IDX_traces_session', ['sessionId'])
export class TraceEntity {
  /** W3C trace id: 32 lowercase hex digits. */
  @PrimaryColumn({ name: 'trace_id', type: 'varchar', length: 32 })
  traceId!: string;

  @Column({ name: 'run_id', type: 'uuid' })
  runId!: string;

  @Column({ name: 'session_id', type: 'varchar', length: 128 })
  sessionId!: string;

  @Column({ name: 'user_id', type: 'varchar', length: 255, nullable: true })
  userId!: string | null;

  @Column({ name: 'component_type', type: 'varchar', length: 16 })
  componentType!: string;

  @Column({ name: 'component_id', type: 'varchar', length: 128 })
  componentId!: string;

  /** The run's status as the trace last saw it: queued, running, then completed, failed or cancelled. */
  @Column({ type: 'varchar', length: 16 })
  status!: string;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt!: Date;

  @Column({ name: 'ended_at', type: 'timestamptz', nullable: true })
  endedAt!: Date | null;
}

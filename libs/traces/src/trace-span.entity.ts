import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** One span of a trace; spans age out by their own start (see TraceRetention). */
@Entity('trace_spans')
@Index('IDX_trace_spans_started', ['startedAt'])
export class TraceSpanEntity {
  @PrimaryColumn({ name: 'trace_id', type: 'varchar', length: 32 })
  traceId!: string;

  /** W3C span id: 16 lowercase hex digits. */
  @PrimaryColumn({ name: 'span_id', type: 'varchar', length: 16 })
  spanId!: string;

  @Column({ name: 'parent_id', type: 'varchar', length: 16, nullable: true })
  parentId!: string | null;

  @Column({ type: 'varchar', length: 128 })
  name!: string;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt!: Date;

  @Column({ name: 'ended_at', type: 'timestamptz' })
  endedAt!: Date;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  attributes!: Record<string, unknown>;
}

import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * "Please stop this run", keyed by run id (= job id), live for QUEUE_CANCEL_INTENT_TTL_SECONDS.
 * Kept apart from the job so synchronous runs (which have no job) are cancelled the same way.
 */
@Entity('queue_cancellation_intents')
export class CancellationIntentEntity {
  @PrimaryColumn({ name: 'run_id', type: 'uuid' })
  runId!: string;

  @Column({ name: 'requested_at', type: 'timestamptz', default: () => 'now()' })
  requestedAt!: Date;

  @Column({ name: 'requested_by', type: 'varchar', length: 255, nullable: true })
  requestedBy!: string | null;
}

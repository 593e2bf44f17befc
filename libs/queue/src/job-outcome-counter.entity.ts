import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Attempts finished, by outcome, across every worker: the source of the processed/failed
 * counters on /metrics. Kept in the database because the api (which serves /metrics) does
 * not run jobs, and bumped in the same statement that records the outcomes.
 */
@Entity('queue_job_outcome_counters')
export class JobOutcomeCounterEntity {
  @PrimaryColumn({ type: 'varchar', length: 16 })
  outcome!: string;

  @Column({ type: 'bigint', default: 0 })
  total!: string;
}

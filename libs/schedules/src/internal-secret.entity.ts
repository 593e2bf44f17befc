import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Process-independent secrets the replicas share, generated once (INTERNAL_SERVICE_TOKEN when unset). */
@Entity('internal_secrets')
export class InternalSecretEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  name!: string;

  @Column({ type: 'text' })
  value!: string;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;
}

import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

@Entity('sessions')
@Index('IDX_sessions_user_created', ['userId', 'createdAt'])
// Everyone's sessions, newest first (an admin's list).
@Index('IDX_sessions_created', ['createdAt'])
export class SessionEntity {
  /** Client-chosen (or generated) id. */
  @PrimaryColumn({ type: 'varchar', length: 128 })
  id!: string;

  /** The component of the session's first run. */
  @Column({ name: 'component_type', type: 'varchar', length: 16 })
  componentType!: string;

  @Column({ name: 'component_id', type: 'varchar', length: 128 })
  componentId!: string;

  @Column({ name: 'user_id', type: 'varchar', length: 255, nullable: true })
  userId!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}

import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** A fact a component (or a client) keeps about a user. */
@Entity('memories')
@Index('IDX_memories_user_created', ['userId', 'createdAt'])
// Newest-changed first, a user's (GET /memories, ctx.memories.list()) or everyone's.
@Index('IDX_memories_user_updated', ['userId', 'updatedAt'])
@Index('IDX_memories_updated', ['updatedAt'])
export class MemoryEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'text' })
  memory!: string;

  @Column({ type: 'varchar', length: 100, array: true, default: () => "'{}'" })
  topics!: string[];

  @Column({ name: 'user_id', type: 'varchar', length: 255, nullable: true })
  userId!: string | null;

  @Column({ name: 'component_type', type: 'varchar', length: 16, nullable: true })
  componentType!: string | null;

  @Column({ name: 'component_id', type: 'varchar', length: 128, nullable: true })
  componentId!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}

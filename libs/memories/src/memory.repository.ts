import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';

import { DataScope } from '@app/access';
import { fetchPage, PageRequest } from '@app/pagination';

import { MemorySortField } from './memory.dto';
import { MemoryEntity } from './memory.entity';

const SORT_COLUMNS: Record<MemorySortField, string> = { created_at: 'memory.created_at', updated_at: 'memory.updated_at' };

/** The most distinct topics GET /memory_topics answers. */
const MAX_TOPICS_LISTED = 1000;

export interface MemoryFilters {
  userId?: string;
  componentId?: string;
  topic?: string;
  search?: string;
}

/** Every read takes the caller's DataScope first. */
@Injectable()
export class MemoryRepository {
  constructor(@InjectRepository(MemoryEntity) private readonly rows: Repository<MemoryEntity>) {}

  async findById(scope: DataScope, id: string): Promise<MemoryEntity | null> {
    const memory = await this.rows.findOneBy({ id });
    return memory && scope.includes(memory.userId) ? memory : null;
  }

  async insert(memory: MemoryEntity): Promise<void> {
    await this.rows.insert(memory);
  }

  async update(id: string, changes: Partial<Pick<MemoryEntity, 'memory' | 'topics'>>): Promise<void> {
    await this.rows.update({ id }, { ...changes, updatedAt: () => 'now()' });
  }

  async delete(id: string): Promise<void> {
    await this.rows.delete({ id });
  }

  page(scope: DataScope, filters: MemoryFilters, request: PageRequest<MemorySortField>): Promise<[MemoryEntity[], number]> {
    const owner = scope.where('memory.user_id');
    const query = this.rows.createQueryBuilder('memory').where(owner.sql, owner.params);
    if (filters.userId !== undefined) {
      query.andWhere('memory.user_id = :userId', { userId: filters.userId });
    }
    if (filters.componentId !== undefined) {
      query.andWhere('memory.component_id = :componentId', { componentId: filters.componentId });
    }
    if (filters.topic !== undefined) {
      query.andWhere(':topic = ANY (memory.topics)', { topic: filters.topic });
    }
    if (filters.search !== undefined) {
      query.andWhere(`memory.memory ILIKE :search ESCAPE '\\'`, { search: `%${filters.search.replace(/[\\%_]/g, '\\$&')}%` });
    }
    return fetchPage(query, request, { sort: SORT_COLUMNS[request.sortBy], id: 'memory.id' });
  }

  /** The distinct topics of the memories the scope sees, alphabetically. */
  async topics(scope: DataScope, userId?: string): Promise<string[]> {
    const owner = scope.where('memory.user_id');
    const query = this.rows
      .createQueryBuilder('memory')
      .select('DISTINCT unnest(memory.topics)', 'topic')
      .where(owner.sql, owner.params)
      .orderBy('topic')
      .limit(MAX_TOPICS_LISTED);
    if (userId !== undefined) {
      query.andWhere('memory.user_id = :userId', { userId });
    }
    const rows: { topic: string }[] = await query.getRawMany();
    return rows.map((row) => row.topic);
  }

  /** One user's latest memories, newest first (what a component sees through ctx.memories). */
  latestOf(userId: string | null, limit: number): Promise<MemoryEntity[]> {
    return this.rows.find({ where: { userId: userId ?? IsNull() }, order: { updatedAt: 'DESC', id: 'ASC' }, take: limit });
  }
}

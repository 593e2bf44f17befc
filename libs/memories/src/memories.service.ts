import { Injectable } from '@nestjs/common';

import { assertMayChange, attributedUser, DataScope, Principal } from '@app/access';
import { timeOrderedId } from '@app/database';
import { Page, toPage } from '@app/pagination';

import { MemoryErrorCode, MemoryException } from './memories.exception';
import {
  CreateMemoryDto,
  ListMemoriesQuery,
  ListMemoryTopicsQuery,
  MAX_TOPICS,
  MEMORY_MAX_LENGTH,
  MemoryDto,
  TOPIC_MAX_LENGTH,
  UpdateMemoryDto,
} from './memory.dto';
import { MemoryEntity } from './memory.entity';
import { toMemoryDto } from './memory.mapper';
import { MemoryRepository } from './memory.repository';

/** How many of the user's latest memories a component reads (`ctx.memories.list()`). */
export const RUN_MEMORIES_LISTED = 100;

/**
 * The memory domain's API for REST, MCP and components alike: attribution and self-scoping are
 * decided here, with the same rules as sessions.
 */
@Injectable()
export class MemoriesService {
  constructor(private readonly memories: MemoryRepository) {}

  async list(caller: Principal, query: ListMemoriesQuery): Promise<Page<MemoryDto>> {
    const startedAt = performance.now();
    const request = query.toPageRequest();
    const [rows, total] = await this.memories.page(
      DataScope.of(caller),
      { userId: query.user_id, componentId: query.component_id, topic: query.topic, search: query.search },
      request,
    );
    return toPage(request, rows.map(toMemoryDto), total, startedAt);
  }

  async get(caller: Principal, id: string): Promise<MemoryDto> {
    return toMemoryDto(await this.find(caller, id));
  }

  create(caller: Principal, request: CreateMemoryDto): Promise<MemoryDto> {
    return this.store({
      memory: request.memory,
      topics: request.topics ?? [],
      userId: attributedUser(caller, request.user_id),
      componentType: request.component_type ?? null,
      componentId: request.component_id ?? null,
    });
  }

  async update(caller: Principal, id: string, changes: UpdateMemoryDto): Promise<MemoryDto> {
    await this.findToChange(caller, id, 'update');
    await this.memories.update(id, { memory: changes.memory, topics: changes.topics });
    return this.get(caller, id);
  }

  async remove(caller: Principal, id: string): Promise<void> {
    await this.findToChange(caller, id, 'delete');
    await this.memories.delete(id);
  }

  topics(caller: Principal, query: ListMemoryTopicsQuery): Promise<string[]> {
    return this.memories.topics(DataScope.of(caller), query.user_id);
  }

  /** A component's read (`ctx.memories.list()`): the run's user's latest memories, newest first. */
  async latestOf(userId: string | null): Promise<MemoryDto[]> {
    return (await this.memories.latestOf(userId, RUN_MEMORIES_LISTED)).map(toMemoryDto);
  }

  /** A component's write (`ctx.memories.add()`): for the run's user, attributed to the component. */
  addFor(userId: string | null, component: { kind: string; id: string }, memory: unknown, topics: unknown = []): Promise<MemoryDto> {
    return this.store({ ...checkedFromComponent(memory, topics), userId, componentType: component.kind, componentId: component.id });
  }

  private async store(fields: Pick<MemoryEntity, 'memory' | 'topics' | 'userId' | 'componentType' | 'componentId'>): Promise<MemoryDto> {
    const now = new Date();
    const memory = Object.assign(new MemoryEntity(), { id: timeOrderedId(), ...fields, createdAt: now, updatedAt: now });
    await this.memories.insert(memory);
    return toMemoryDto(memory);
  }

  private async findToChange(caller: Principal, id: string, action: string): Promise<MemoryEntity> {
    const memory = await this.find(caller, id);
    assertMayChange(caller, memory.userId, `Memory '${id}'`, action);
    return memory;
  }

  private async find(caller: Principal, id: string): Promise<MemoryEntity> {
    const memory = await this.memories.findById(DataScope.of(caller), id);
    if (!memory) {
      throw new MemoryException(MemoryErrorCode.NotFound, `Memory '${id}' not found`);
    }
    return memory;
  }
}

/** A component's bad call fails its run with a message saying what was wrong, as the route's 422 would. */
function checkedFromComponent(memory: unknown, topics: unknown): { memory: string; topics: string[] } {
  if (typeof memory !== 'string' || memory.length === 0 || memory.length > MEMORY_MAX_LENGTH) {
    throw new Error(`ctx.memories.add needs a memory of 1 to ${MEMORY_MAX_LENGTH} characters`);
  }
  const valid =
    Array.isArray(topics) &&
    topics.length <= MAX_TOPICS &&
    topics.every((topic) => typeof topic === 'string' && topic.length > 0 && topic.length <= TOPIC_MAX_LENGTH);
  if (!valid) {
    throw new Error(`ctx.memories.add takes at most ${MAX_TOPICS} topics of 1 to ${TOPIC_MAX_LENGTH} characters`);
  }
  return { memory, topics: topics as string[] };
}

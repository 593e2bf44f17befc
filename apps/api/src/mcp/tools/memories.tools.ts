import { Injectable } from '@nestjs/common';
import { z } from 'zod';

import { Principal } from '@app/access';
import { McpTool, McpToolset } from '@app/mcp';
import {
  CreateMemoryDto,
  ListMemoriesQuery,
  ListMemoryTopicsQuery,
  MemoriesService,
  MemoryDto,
  MemoryIdParams,
  MemoryPageDto,
  UpdateMemoryDto,
} from '@app/memories';

import { dtoArguments, McpArguments, pageArguments } from '../mcp-arguments';

const memoryId = z.string().describe('Memory id (UUID)');

/** The memory routes as tools, under the same scopes: a model can recall and keep facts about its user. */
@McpToolset()
@Injectable()
export class MemoryTools {
  constructor(
    private readonly memories: MemoriesService,
    private readonly args: McpArguments,
  ) {}

  @McpTool({
    name: 'list_memories',
    mirrors: 'GET /memories',
    description: 'Memories the caller may see, newest first; filter by user_id, component_id, topic or search (substring).',
    input: z.object({ ...dtoArguments(ListMemoriesQuery), ...pageArguments(ListMemoriesQuery) }),
    annotations: { readOnlyHint: true },
  })
  async list(principal: Principal, args: Record<string, unknown>): Promise<MemoryPageDto> {
    return this.memories.list(principal, await this.args.as(ListMemoriesQuery, args));
  }

  @McpTool({
    name: 'get_memory',
    mirrors: 'GET /memories/:memory_id',
    description: 'One memory.',
    input: z.object({ memory_id: memoryId }),
    annotations: { readOnlyHint: true },
  })
  async get(principal: Principal, args: Record<string, unknown>): Promise<MemoryDto> {
    return this.memories.get(principal, (await this.idOf(args)).memory_id);
  }

  @McpTool({
    name: 'create_memory',
    mirrors: 'POST /memories',
    description: 'Keep a fact about a user. A token’s memories belong to sa:<name>.',
    input: z.object(dtoArguments(CreateMemoryDto)).strict(),
  })
  async create(principal: Principal, args: Record<string, unknown>): Promise<MemoryDto> {
    return this.memories.create(principal, await this.args.as(CreateMemoryDto, args, 'body'));
  }

  @McpTool({
    name: 'update_memory',
    mirrors: 'PATCH /memories/:memory_id',
    description: 'Change a memory’s text or topics; fields left out are untouched.',
    input: z.object({ memory_id: memoryId, ...dtoArguments(UpdateMemoryDto) }).strict(),
  })
  async update(principal: Principal, args: Record<string, unknown>): Promise<MemoryDto> {
    const { memory_id, ...changes } = args;
    const { memory_id: id } = await this.idOf({ memory_id });
    return this.memories.update(principal, id, await this.args.as(UpdateMemoryDto, changes, 'body'));
  }

  @McpTool({
    name: 'delete_memory',
    mirrors: 'DELETE /memories/:memory_id',
    description: 'Delete a memory.',
    input: z.object({ memory_id: memoryId }),
    annotations: { destructiveHint: true },
  })
  async remove(principal: Principal, args: Record<string, unknown>): Promise<{ deleted: string }> {
    const { memory_id } = await this.idOf(args);
    await this.memories.remove(principal, memory_id);
    return { deleted: memory_id };
  }

  @McpTool({
    name: 'list_memory_topics',
    mirrors: 'GET /memory_topics',
    description: 'The distinct topics of the memories the caller may see.',
    input: z.object(dtoArguments(ListMemoryTopicsQuery)),
    annotations: { readOnlyHint: true },
  })
  async topics(principal: Principal, args: Record<string, unknown>): Promise<{ topics: string[] }> {
    return { topics: await this.memories.topics(principal, await this.args.as(ListMemoryTopicsQuery, args)) };
  }

  private idOf(args: Record<string, unknown>): Promise<MemoryIdParams> {
    return this.args.as(MemoryIdParams, { memory_id: args.memory_id }, 'param');
  }
}

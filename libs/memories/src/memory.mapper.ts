import { toEpoch } from '@app/database';

import { MemoryDto } from './memory.dto';
import { MemoryEntity } from './memory.entity';

export function toMemoryDto(memory: MemoryEntity): MemoryDto {
  return {
    memory_id: memory.id,
    memory: memory.memory,
    topics: memory.topics,
    user_id: memory.userId,
    component_type: memory.componentType,
    component_id: memory.componentId,
    created_at: toEpoch(memory.createdAt),
    updated_at: toEpoch(memory.updatedAt),
  };
}

import { toEpoch } from '@app/database';

import { SessionDto } from './session.dto';
import { SessionEntity } from './session.entity';

export function toSessionDto(session: SessionEntity): SessionDto {
  return {
    session_id: session.id,
    component_type: session.componentType,
    component_id: session.componentId,
    user_id: session.userId,
    created_at: toEpoch(session.createdAt),
    updated_at: toEpoch(session.updatedAt),
  };
}

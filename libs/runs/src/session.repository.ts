import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';

import { DataScope } from '@app/access';
import { fetchPage, PageRequest } from '@app/pagination';

import { SessionSortField } from './session.dto';
import { SessionEntity } from './session.entity';

const SORT_COLUMNS: Record<SessionSortField, string> = { created_at: 'session.created_at', updated_at: 'session.updated_at' };

@Injectable()
export class SessionRepository {
  constructor(@InjectRepository(SessionEntity) private readonly rows: Repository<SessionEntity>) {}

  async findById(scope: DataScope, id: string): Promise<SessionEntity | null> {
    const session = await this.rows.findOneBy({ id });
    return session && scope.includes(session.userId) ? session : null;
  }

  async insert(manager: EntityManager, session: SessionEntity): Promise<void> {
    await manager.insert(SessionEntity, session);
  }

  /**
   * Creates the session, or marks an existing one as just used. Returns false when the id is a session
   * of another user: a run only ever joins a session of the user it is attributed to.
   */
  async upsert(manager: EntityManager, session: SessionEntity): Promise<boolean> {
    await manager.createQueryBuilder().insert().into(SessionEntity).values(session).orIgnore().execute();
    const stored = await manager.findOneBy(SessionEntity, { id: session.id });
    if (stored?.userId !== session.userId) {
      return false;
    }
    await manager.update(SessionEntity, { id: session.id }, { updatedAt: () => 'now()' });
    return true;
  }

  page(scope: DataScope, request: PageRequest<SessionSortField>): Promise<[SessionEntity[], number]> {
    const owner = scope.where('session.user_id');
    return fetchPage(this.rows.createQueryBuilder('session').where(owner.sql, owner.params), request, {
      sort: SORT_COLUMNS[request.sortBy],
      id: 'session.id',
    });
  }
}

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';

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

  page(scope: DataScope, request: PageRequest<SessionSortField>): Promise<[SessionEntity[], number]> {
    const owner = scope.where('session.user_id');
    return fetchPage(this.rows.createQueryBuilder('session').where(owner.sql, owner.params), request, {
      sort: SORT_COLUMNS[request.sortBy],
      id: 'session.id',
    });
  }
}

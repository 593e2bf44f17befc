import { Injectable } from '@nestjs/common';

import { assertMayChange, DataScope, Principal } from '@app/access';
import { Page, toPage } from '@app/pagination';

import { RunDto } from './run.dto';
import { toRunDto } from './run.mapper';
import { RunRepository } from './run.repository';
import { RunErrorCode, RunException } from './runs.exception';
import { ListSessionRunsQuery, ListSessionsQuery, SessionDto } from './session.dto';
import { SessionEntity } from './session.entity';
import { toSessionDto } from './session.mapper';
import { SessionRepository } from './session.repository';

const sessionNotFound = (sessionId: string) => new RunException(RunErrorCode.SessionNotFound, `Session '${sessionId}' not found`);

/** Session reads and deletes, self-scoped like every read and write. */
@Injectable()
export class SessionsService {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly runRows: RunRepository,
  ) {}

  async list(caller: Principal, query: ListSessionsQuery): Promise<Page<SessionDto>> {
    const startedAt = performance.now();
    const request = query.toPageRequest();
    const [rows, total] = await this.sessions.page(DataScope.of(caller), request);
    return toPage(request, rows.map(toSessionDto), total, startedAt);
  }

  async get(caller: Principal, sessionId: string): Promise<SessionDto> {
    return toSessionDto(await this.find(caller, sessionId));
  }

  async runs(caller: Principal, sessionId: string, query: ListSessionRunsQuery): Promise<Page<RunDto>> {
    const startedAt = performance.now();
    await this.find(caller, sessionId);
    const request = query.toPageRequest();
    const [rows, total] = await this.runRows.pageBySession(DataScope.of(caller), sessionId, request);
    return toPage(request, rows.map(toRunDto), total, startedAt);
  }

  /** Deletes the session, its runs and their jobs; 409 while one of its runs has not ended (cancel it, or wait). */
  async remove(caller: Principal, sessionId: string): Promise<void> {
    const removal = await this.sessions.remove(DataScope.of(caller), sessionId, (ownerId) =>
      assertMayChange(caller, ownerId, `Session '${sessionId}'`, 'delete'),
    );
    if (removal.outcome === 'missing') {
      throw sessionNotFound(sessionId);
    }
    if (removal.outcome === 'busy') {
      throw new RunException(
        RunErrorCode.SessionBusy,
        `Session '${sessionId}' has ${removal.runs} run(s) not ended yet: cancel them or wait for them to end, then delete it`,
      );
    }
  }

  private async find(caller: Principal, sessionId: string): Promise<SessionEntity> {
    const session = await this.sessions.findById(DataScope.of(caller), sessionId);
    if (!session) {
      throw sessionNotFound(sessionId);
    }
    return session;
  }
}

import { Controller, Delete, Get, HttpCode, HttpStatus, Param, Query } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';

import { Principal } from '@app/access';
import { CurrentPrincipal, RequireScope } from '@app/auth';
import { ErrorBodyDto, ValidationErrorBodyDto } from '@app/errors';
import {
  ListSessionRunsQuery,
  ListSessionsQuery,
  RunPageDto,
  SessionDto,
  SessionIdParams,
  SessionPageDto,
  SessionsService,
} from '@app/runs';

@ApiTags('sessions')
@ApiUnprocessableEntityResponse({ type: ValidationErrorBodyDto, description: 'Validation error' })
@Controller('sessions')
export class SessionsController {
  constructor(private readonly sessions: SessionsService) {}

  @Get()
  @RequireScope('sessions:read')
  @ApiOperation({ summary: "The caller's sessions (self-scoped)" })
  @ApiOkResponse({ type: SessionPageDto })
  list(@CurrentPrincipal() caller: Principal, @Query() query: ListSessionsQuery): Promise<SessionPageDto> {
    return this.sessions.list(caller, query);
  }

  @Get(':session_id')
  @RequireScope('sessions:read')
  @ApiOperation({ summary: 'One session' })
  @ApiOkResponse({ type: SessionDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  get(@CurrentPrincipal() caller: Principal, @Param() params: SessionIdParams): Promise<SessionDto> {
    return this.sessions.get(caller, params.session_id);
  }

  @Delete(':session_id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @RequireScope('sessions:delete')
  @ApiOperation({
    summary: 'Delete a session with its runs',
    description:
      'Deletes the session, its runs (with their trace summaries) and their queue jobs. A session with a run not ended yet (queued, running or paused) answers 409: cancel the run or wait for it. A later run naming this session_id starts a new session.',
  })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'A run of the session has not ended' })
  remove(@CurrentPrincipal() caller: Principal, @Param() params: SessionIdParams): Promise<void> {
    return this.sessions.remove(caller, params.session_id);
  }

  @Get(':session_id/runs')
  @RequireScope('sessions:read')
  @ApiOperation({ summary: "The session's runs" })
  @ApiOkResponse({ type: RunPageDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  runs(@CurrentPrincipal() caller: Principal, @Param() params: SessionIdParams, @Query() query: ListSessionRunsQuery): Promise<RunPageDto> {
    return this.sessions.runs(caller, params.session_id, query);
  }
}

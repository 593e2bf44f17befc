import { Injectable } from '@nestjs/common';
import { z } from 'zod';

import { Principal } from '@app/access';
import { McpTool, McpToolset } from '@app/mcp';
import {
  ListSessionRunsQuery,
  ListSessionsQuery,
  RunPageDto,
  SessionDto,
  SessionIdParams,
  SessionPageDto,
  SessionsService,
} from '@app/runs';

import { McpArguments, pageArguments } from '../mcp-arguments';

const sessionId = z.string().describe('Session id');

/** Read-only, like the session tools of comparable services: a model reviews history, it does not rewrite it. */
@McpToolset()
@Injectable()
export class SessionTools {
  constructor(
    private readonly sessions: SessionsService,
    private readonly args: McpArguments,
  ) {}

  @McpTool({
    name: 'list_sessions',
    mirrors: 'GET /sessions',
    description: "The caller's sessions, newest first.",
    input: z.object(pageArguments(ListSessionsQuery)),
    annotations: { readOnlyHint: true },
  })
  async list(principal: Principal, args: Record<string, unknown>): Promise<SessionPageDto> {
    return this.sessions.list(principal, await this.args.as(ListSessionsQuery, args));
  }

  @McpTool({
    name: 'get_session',
    mirrors: 'GET /sessions/:session_id',
    description: 'One session.',
    input: z.object({ session_id: sessionId }),
    annotations: { readOnlyHint: true },
  })
  async get(principal: Principal, args: Record<string, unknown>): Promise<SessionDto> {
    const { session_id } = await this.args.as(SessionIdParams, args, 'param');
    return this.sessions.get(principal, session_id);
  }

  @McpTool({
    name: 'list_session_runs',
    mirrors: 'GET /sessions/:session_id/runs',
    description: "A session's runs (message, status, content).",
    input: z.object({ session_id: sessionId, ...pageArguments(ListSessionRunsQuery) }),
    annotations: { readOnlyHint: true },
  })
  async runs(principal: Principal, args: Record<string, unknown>): Promise<RunPageDto> {
    const { session_id, ...query } = args;
    const { session_id: id } = await this.args.as(SessionIdParams, { session_id }, 'param');
    return this.sessions.runs(principal, id, await this.args.as(ListSessionRunsQuery, query));
  }
}

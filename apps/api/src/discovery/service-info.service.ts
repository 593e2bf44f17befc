import { Injectable } from '@nestjs/common';

import { A2A_BINDINGS, A2A_PATH } from '@app/a2a';
import { Principal } from '@app/access';
import { Authenticator } from '@app/auth';
import { API_VERSION, Env, MCP_PATH, SERVICE_VERSION } from '@app/config';
import { mcpOAuthInfo } from '@app/mcp';
import { ComponentDto, ComponentKind, RunsService } from '@app/runs';
import { WEBSOCKET_PATH } from '@app/websocket';

import { ConfigDto, HealthDto, InfoDto, McpInfoDto } from './discovery.dto';

@Injectable()
export class ServiceInfoService {
  private readonly startedAt = Math.floor(Date.now() / 1000);

  constructor(
    private readonly env: Env,
    private readonly authenticator: Authenticator,
    private readonly runs: RunsService,
  ) {}

  health(): HealthDto {
    return { status: 'ok', instantiated_at: this.startedAt };
  }

  info(): InfoDto {
    return {
      os_id: this.env.OS_ID,
      name: this.env.OS_NAME,
      version: SERVICE_VERSION,
      api_version: API_VERSION,
      auth_mode: this.authenticator.mode,
      mcp: this.mcp(),
      a2a: {
        path: A2A_PATH,
        agent_card: `${A2A_PATH}/{agents|teams|workflows}/{id}/.well-known/agent-card.json`,
        bindings: [...A2A_BINDINGS],
      },
      websocket: { path: WEBSOCKET_PATH, actions: ['authenticate', 'run', 'watch', 'cancel'] },
      url: this.env.publicUrl,
    };
  }

  config(principal: Principal): ConfigDto {
    return {
      os_id: this.env.OS_ID,
      name: this.env.OS_NAME,
      version: SERVICE_VERSION,
      auth_mode: this.authenticator.mode,
      principal: principal.userId,
      credential: principal.kind,
      scopes: [...principal.scopes],
      mcp: this.mcp(),
      agents: this.runnable(principal, 'agent', 'agents:run'),
      teams: this.runnable(principal, 'team', 'teams:run'),
      workflows: this.runnable(principal, 'workflow', 'workflows:run'),
    };
  }

  /** What the caller can run: the run routes' scope, narrowed to each component as the guard narrows it. */
  private runnable(principal: Principal, kind: ComponentKind, runScope: string): ComponentDto[] {
    return this.runs.componentsFor(principal, kind, runScope);
  }

  private mcp(): McpInfoDto {
    return { enabled: this.env.MCP_ENABLED, path: this.env.MCP_ENABLED ? MCP_PATH : null, oauth: mcpOAuthInfo(this.env) };
  }
}

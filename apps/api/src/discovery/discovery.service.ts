import { Injectable } from '@nestjs/common';

import { Principal } from '@app/access';
import { Authenticator } from '@app/auth';
import { Env, MCP_PATH, SERVICE_VERSION, API_VERSION } from '@app/config';
import { mcpOAuthInfo } from '@app/mcp';

import { ConfigDto, HealthDto, InfoDto } from './discovery.dto';

@Injectable()
export class DiscoveryService {
  private readonly startedAt = Math.floor(Date.now() / 1000);

  constructor(
    private readonly env: Env,
    private readonly authenticator: Authenticator,
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
      mcp: { enabled: this.env.MCP_ENABLED, path: this.env.MCP_ENABLED ? MCP_PATH : null, oauth: mcpOAuthInfo(this.env) },
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
      scopes: [...principal.scopes],
    };
  }
}

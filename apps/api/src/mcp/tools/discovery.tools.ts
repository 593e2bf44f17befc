import { Injectable } from '@nestjs/common';

import { Principal } from '@app/access';
import { McpTool, McpToolset } from '@app/mcp';

import { ConfigDto } from '../../discovery/discovery.dto';
import { ServiceInfoService } from '../../discovery/service-info.service';

@McpToolset()
@Injectable()
export class DiscoveryTools {
  constructor(private readonly discovery: ServiceInfoService) {}

  @McpTool({
    name: 'get_config',
    mirrors: 'GET /config',
    description:
      'Start here: the service configuration as the caller sees it: its principal, its scopes, and the agents, teams and workflows it can run.',
    annotations: { readOnlyHint: true },
  })
  config(principal: Principal): ConfigDto {
    return this.discovery.config(principal);
  }
}

import { ModuleMetadata } from '@nestjs/common';

import { Env } from '@app/config';
import { McpModule } from '@app/mcp';

import { OneLineErrors } from '../errors/one-line-errors';
import { McpController } from './mcp.controller';
import { McpArguments } from './mcp-arguments';
import { ProtectedResourceController } from './protected-resource.controller';
import { AgentRunTools, TeamRunTools, WorkflowRunTools } from './tools/component-runs.tools';
import { DiscoveryTools } from './tools/discovery.tools';
import { MemoryTools } from './tools/memories.tools';
import { QueueTools } from './tools/queue.tools';
import { ScheduleTools } from './tools/schedules.tools';
import { ServiceAccountTools } from './tools/service-accounts.tools';
import { SessionTools } from './tools/sessions.tools';

type Wiring = Required<Pick<ModuleMetadata, 'imports' | 'controllers' | 'providers'>>;

/** What the api mounts for MCP: nothing at all with MCP_ENABLED off, so POST /mcp answers 404. */
export function mcpWiring(env: Env): Wiring {
  if (!env.MCP_ENABLED) {
    return { imports: [], controllers: [], providers: [] };
  }
  return {
    imports: [McpModule.forRoot({ errorRenderer: OneLineErrors })],
    controllers: [McpController, ProtectedResourceController],
    providers: [
      McpArguments,
      DiscoveryTools,
      ServiceAccountTools,
      AgentRunTools,
      TeamRunTools,
      WorkflowRunTools,
      SessionTools,
      MemoryTools,
      ScheduleTools,
      QueueTools,
    ],
  };
}

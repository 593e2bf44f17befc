import 'reflect-metadata';

import { Controller, Get, Injectable, Module, Type } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

import { Principal } from '@app/access';
import { RequireScope, RouteScopes } from '@app/auth';

import { McpTool, McpToolset } from './mcp-tool.decorator';
import { McpToolRegistry } from './mcp-tool.registry';

@Controller('agents')
class AgentsController {
  @Get(':agent_id')
  @RequireScope('agents:read', { componentParam: 'agent_id' })
  get(): string {
    return 'agent';
  }
}

@McpToolset()
@Injectable()
class GoodTools {
  @McpTool({ name: 'get_agent', mirrors: 'GET /agents/:agent_id', description: 'One agent', input: z.object({ agent_id: z.string() }) })
  get(principal: Principal): string | null {
    return principal.userId;
  }
}

@McpToolset()
@Injectable()
class MissingRouteTools {
  @McpTool({
    name: 'delete_agent',
    mirrors: 'DELETE /agents/:agent_id',
    description: 'No such route',
    input: z.object({ agent_id: z.string() }),
  })
  remove(): void {}
}

@McpToolset()
@Injectable()
class UnnarrowedTools {
  @McpTool({ name: 'get_any_agent', mirrors: 'GET /agents/:agent_id', description: 'Lacks the component argument' })
  get(): void {}
}

async function registryWith(toolset: Type): Promise<McpToolRegistry> {
  @Module({ imports: [DiscoveryModule], controllers: [AgentsController], providers: [toolset, RouteScopes, McpToolRegistry] })
  class TestModule {}
  const module = await Test.createTestingModule({ imports: [TestModule] }).compile();
  await module.init();
  return module.get(McpToolRegistry);
}

describe('McpToolRegistry', () => {
  it('binds each tool to the scope its mirrored REST route declares', async () => {
    const registry = await registryWith(GoodTools);
    expect(registry.tools.map(({ name, mirrors, rule }) => ({ name, mirrors, rule }))).toEqual([
      { name: 'get_agent', mirrors: 'GET /agents/:agent_id', rule: { scope: 'agents:read', componentParam: 'agent_id' } },
    ]);
  });

  it('fails the boot when a tool mirrors a route that does not exist', async () => {
    await expect(registryWith(MissingRouteTools)).rejects.toThrow(
      'MCP tool delete_agent mirrors DELETE /agents/:agent_id, which is not a REST route declaring @RequireScope',
    );
  });

  it('fails the boot when a tool cannot narrow a per-component scope', async () => {
    await expect(registryWith(UnnarrowedTools)).rejects.toThrow(
      'MCP tool get_any_agent mirrors GET /agents/:agent_id but takes no agent_id argument',
    );
  });
});

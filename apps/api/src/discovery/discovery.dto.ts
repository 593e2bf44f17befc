import { ApiProperty } from '@nestjs/swagger';

import { CredentialKind } from '@app/access';
import { ComponentDto } from '@app/runs';

export class HealthDto {
  @ApiProperty({ example: 'ok' }) status!: string;
  @ApiProperty({ type: 'integer', description: 'Epoch seconds this process started' }) instantiated_at!: number;
}

export class McpOAuthDto {
  @ApiProperty({ type: [String], nullable: true }) authorization_servers!: string[] | null;
  @ApiProperty({ type: 'string', nullable: true }) resource!: string | null;
}

export class McpInfoDto {
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ type: 'string', nullable: true, example: '/mcp' }) path!: string | null;
  @ApiProperty({ type: McpOAuthDto, nullable: true }) oauth!: McpOAuthDto | null;
}

export class A2AInfoDto {
  @ApiProperty({ example: '/a2a' }) path!: string;
  @ApiProperty({
    example: '/a2a/{agents|teams|workflows}/{id}/.well-known/agent-card.json',
    description: 'Where each agent, team and workflow publishes its A2A agent card',
  })
  agent_card!: string;
  @ApiProperty({ type: [String], example: ['JSONRPC', 'HTTP+JSON'] }) bindings!: string[];
}

export class WebSocketInfoDto {
  @ApiProperty({ example: '/ws' }) path!: string;
  @ApiProperty({ type: [String], example: ['authenticate', 'run', 'watch', 'cancel'] }) actions!: string[];
}

export class InfoDto {
  @ApiProperty() os_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'Service version' }) version!: string;
  @ApiProperty({ description: 'Interface version of the OpenAPI document' }) api_version!: string;
  @ApiProperty({ enum: ['none', 'security_key', 'jwt'] }) auth_mode!: string;
  @ApiProperty({ type: McpInfoDto }) mcp!: McpInfoDto;
  @ApiProperty({ type: A2AInfoDto, description: 'Agent2Agent (A2A v1.0) for every agent, team and workflow' }) a2a!: A2AInfoDto;
  @ApiProperty({ type: WebSocketInfoDto, description: 'The WebSocket that runs, watches and cancels runs' }) websocket!: WebSocketInfoDto;
  @ApiProperty({ description: 'Base URL the service announces: its public address' }) url!: string;
}

export class ConfigDto {
  @ApiProperty() os_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty() version!: string;
  @ApiProperty({ enum: ['none', 'security_key', 'jwt'] }) auth_mode!: string;
  @ApiProperty({ type: 'string', nullable: true, description: 'The caller principal (`sa:<name>`, JWT sub) or null' }) principal!:
    string | null;
  @ApiProperty({
    enum: ['anonymous', 'security_key', 'jwt', 'service_account', 'oauth'],
    description:
      'The kind of credential the call was identified by: the security key and an anonymous caller on an open instance hold no scopes and are not scope-checked',
  })
  credential!: CredentialKind;
  @ApiProperty({
    type: [String],
    description: 'Scopes the caller holds (empty for the security key and anonymous callers, which are not scope-checked)',
  })
  scopes!: string[];
  @ApiProperty({ type: McpInfoDto, description: 'Whether and where MCP is mounted' }) mcp!: McpInfoDto;
  @ApiProperty({ type: [ComponentDto], description: 'Agents the caller may run' }) agents!: ComponentDto[];
  @ApiProperty({ type: [ComponentDto], description: 'Teams the caller may run' }) teams!: ComponentDto[];
  @ApiProperty({ type: [ComponentDto], description: 'Workflows the caller may run' }) workflows!: ComponentDto[];
}

import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { Principal } from '@app/access';
import { CurrentPrincipal, Public, RequireScope } from '@app/auth';

import { ConfigDto, HealthDto, InfoDto } from './discovery.dto';
import { ServiceInfoService } from './service-info.service';

@ApiTags('discovery')
@Controller()
export class DiscoveryController {
  constructor(private readonly discovery: ServiceInfoService) {}

  @Get('health')
  @Public()
  @ApiOperation({ summary: 'Liveness check; the first call of client discovery' })
  @ApiOkResponse({ type: HealthDto })
  health(): HealthDto {
    return this.discovery.health();
  }

  @Get('info')
  @Public()
  @ApiOperation({ summary: 'Structured discovery: auth mode and whether MCP is mounted' })
  @ApiOkResponse({ type: InfoDto })
  info(): InfoDto {
    return this.discovery.info();
  }

  @Get('config')
  @RequireScope('config:read')
  @ApiOperation({
    summary: 'Who the caller is, its scopes and the components it may run',
    description: 'Without a credential, a 401 means the instance has authentication; `GET /info` names its mode without one.',
  })
  @ApiOkResponse({ type: ConfigDto })
  config(@CurrentPrincipal() principal: Principal): ConfigDto {
    return this.discovery.config(principal);
  }
}

import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';

import { EndpointScopes, ScheduleCredentialsModule } from '@app/schedules';
import { ServiceAccountsModule } from '@app/service-accounts';

import { Authenticator } from './authenticator.service';
import { JwtVerifier, McpOAuthVerifier } from './jwt-verifier';
import { RouteScopes } from './route-scopes';
import { ScopeGuard } from './scope.guard';

@Global()
@Module({
  imports: [DiscoveryModule, ServiceAccountsModule, ScheduleCredentialsModule],
  providers: [Authenticator, JwtVerifier, McpOAuthVerifier, ScopeGuard, RouteScopes, { provide: EndpointScopes, useExisting: RouteScopes }],
  exports: [Authenticator, ScopeGuard, RouteScopes, EndpointScopes],
})
export class AuthModule {}

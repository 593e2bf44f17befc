import { Global, Module } from '@nestjs/common';

import { ScheduleCredentialsModule } from '@app/schedules';
import { ServiceAccountsModule } from '@app/service-accounts';

import { Authenticator } from './authenticator.service';
import { JwtVerifier, McpOAuthVerifier } from './jwt-verifier';
import { ScopeGuard } from './scope.guard';

@Global()
@Module({
  imports: [ServiceAccountsModule, ScheduleCredentialsModule],
  providers: [Authenticator, JwtVerifier, McpOAuthVerifier, ScopeGuard],
  exports: [Authenticator, ScopeGuard],
})
export class AuthModule {}

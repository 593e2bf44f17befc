import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { FailedLookupLimiter } from './failed-lookup-limiter';
import { ServiceAccountEntity } from './service-account.entity';
import { ServiceAccountRepository } from './service-account.repository';
import { ServiceAccountVerifier } from './service-account-verifier';
import { ServiceAccountsService } from './service-accounts.service';

@Module({
  imports: [TypeOrmModule.forFeature([ServiceAccountEntity])],
  providers: [ServiceAccountRepository, FailedLookupLimiter, ServiceAccountVerifier, ServiceAccountsService],
  exports: [ServiceAccountVerifier, ServiceAccountsService],
})
export class ServiceAccountsModule {}

import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { ServiceAccountEntity } from './service-account.entity';
import { ServiceAccountRepository } from './service-account.repository';
import { ServiceAccountVerifier } from './service-account-verifier';
import { ServiceAccountsService } from './service-accounts.service';

@Module({
  imports: [TypeOrmModule.forFeature([ServiceAccountEntity])],
  providers: [ServiceAccountRepository, ServiceAccountVerifier, ServiceAccountsService],
  exports: [ServiceAccountVerifier, ServiceAccountsService],
})
export class ServiceAccountsModule {}

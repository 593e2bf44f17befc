import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { InternalSecretEntity } from './internal-secret.entity';
import { ScheduleCredentials } from './schedule-credentials';
import { ScheduleEntity } from './schedule.entity';

/** Minted by the worker, resolved by the api's authenticator. */
@Module({
  imports: [TypeOrmModule.forFeature([InternalSecretEntity, ScheduleEntity])],
  providers: [ScheduleCredentials],
  exports: [ScheduleCredentials],
})
export class ScheduleCredentialsModule {}

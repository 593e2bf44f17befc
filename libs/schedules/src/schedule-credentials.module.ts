import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { InternalSecretEntity } from './internal-secret.entity';
import { ScheduleEntity } from './schedule.entity';
import { ScheduleCredentials } from './schedule-credentials';

/** Minted by the worker, resolved by the api's authenticator. */
@Module({
  imports: [TypeOrmModule.forFeature([InternalSecretEntity, ScheduleEntity])],
  providers: [ScheduleCredentials],
  exports: [ScheduleCredentials],
})
export class ScheduleCredentialsModule {}

import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';

import { Env } from '@app/config';

import { dataSourceOptions, migrate } from './data-source';

/**
 * Answers that retrying the same settings cannot change: PostgreSQL's refused login (28P01, 28000) and unknown
 * database (3D000), and TLS the settings ask for and the server cannot give (sslmode=require against a server
 * without SSL; a certificate that does not verify).
 */
const REFUSED_FOR_GOOD = new Set([
  '28P01',
  '28000',
  '3D000',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function refusedForGood(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return REFUSED_FOR_GOOD.has(code ?? '') || /does not support SSL connections/.test(message ?? '');
}

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [Env],
      useFactory: (env: Env) => ({
        ...dataSourceOptions(env.databaseUrl, env.DATABASE_POOL_SIZE),
        autoLoadEntities: true,
        migrationsRun: env.DB_MIGRATE,
        // A refused login or a database that does not exist will not fix itself: the boot ends at once, saying
        // so, where ten retries held the pod silent for half a minute. Unreachable databases are retried.
        toRetry: (error: unknown) => !refusedForGood(error),
      }),
      // TypeORM's own `migrationsRun` would migrate without a lock: we honour the flag ourselves,
      // under the advisory lock, before any provider can touch a table.
      dataSourceFactory: async (options?: DataSourceOptions) => {
        const dataSource = await new DataSource({ ...options!, migrationsRun: false }).initialize();
        if (options?.migrationsRun) {
          const applied = await migrate(dataSource);
          if (applied.length > 0) {
            new Logger('Database').log(`Applied migrations: ${applied.join(', ')}`);
          }
        }
        return dataSource;
      },
    }),
  ],
})
export class DatabaseModule {}

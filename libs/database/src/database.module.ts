import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';

import { Env } from '@app/config';

import { dataSourceOptions, migrate } from './data-source';

/** PostgreSQL's answers that retrying the same settings cannot change: a refused login (28P01, 28000), an unknown database (3D000). */
const REFUSED_FOR_GOOD = new Set(['28P01', '28000', '3D000']);

function refusedForGood(error: unknown): boolean {
  return REFUSED_FOR_GOOD.has((error as { code?: string }).code ?? '');
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

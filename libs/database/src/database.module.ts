import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';

import { Env } from '@app/config';

import { dataSourceOptions, migrate } from './data-source';

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [Env],
      useFactory: (env: Env) => ({
        ...dataSourceOptions(env.databaseUrl, env.DATABASE_POOL_SIZE),
        autoLoadEntities: true,
        migrationsRun: env.DB_MIGRATE,
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

import 'reflect-metadata';

import { INestApplicationContext, ModuleMetadata, Type } from '@nestjs/common';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';

import { Principal } from '@app/access';
import { ConfigModule, loadEnv } from '@app/config';
import { DatabaseModule } from '@app/database';

import { createTestDatabase } from './database';

export interface ModuleOnDatabase {
  /** The cloned database the module's DataSource is connected to. */
  databaseUrl: string;
  dataSource: DataSource;
  get<T>(type: Type<T> | string | symbol): T;
  /** Runs one query on the module's own connection pool (for setting up or asserting stored rows). */
  sql<T extends Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export interface AppOnDatabase extends ModuleOnDatabase {
  /** The Fastify app in process: `app.inject(...)` goes through routing, pipes, guards and filters without a socket. */
  http: NestFastifyApplication;
}

/**
 * Boots `metadata` in process on the real ConfigModule and DatabaseModule, against a database cloned
 * from the migrated template: what the api or worker would wire, without HTTP or a process around it.
 * `env` adds settings to the minimal environment (the database URL, migrations off: the clone has them).
 */
export async function bootModule(metadata: ModuleMetadata, env: Record<string, string> = {}): Promise<ModuleOnDatabase> {
  const { module, databaseUrl } = await compile(metadata, env);
  await module.init();
  return onDatabase(module, databaseUrl);
}

/** Like bootModule, served by a Fastify adapter (not listening): for what only a request shows, such as error bodies. */
export async function bootHttpModule(metadata: ModuleMetadata, env: Record<string, string> = {}): Promise<AppOnDatabase> {
  const { module, databaseUrl } = await compile(metadata, env);
  const http = module.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  await http.init();
  await http.getHttpAdapter().getInstance().ready();
  return { ...onDatabase(http, databaseUrl), http };
}

async function compile(metadata: ModuleMetadata, env: Record<string, string>) {
  const databaseUrl = await createTestDatabase();
  const module = await Test.createTestingModule({
    ...metadata,
    imports: [
      ConfigModule.forRoot(loadEnv({ DATABASE_URL: databaseUrl, DB_MIGRATE: 'false', LOG_LEVEL: 'silent', ...env })),
      DatabaseModule,
      ...(metadata.imports ?? []),
    ],
  }).compile();
  return { module, databaseUrl };
}

function onDatabase(context: INestApplicationContext, databaseUrl: string): ModuleOnDatabase {
  const dataSource = context.get(DataSource);
  return {
    databaseUrl,
    dataSource,
    get: (type) => context.get(type, { strict: false }),
    sql: (text, params = []) => dataSource.query(text, params),
    close: () => context.close(),
  };
}

/** Principals as the authenticator builds them, for calling services directly. */
export const principals = {
  securityKey: (): Principal => ({ kind: 'security_key', userId: null, scopes: [], scopesEnforced: false, selfScoped: false }),
  anonymous: (): Principal => ({ kind: 'anonymous', userId: null, scopes: [], scopesEnforced: false, selfScoped: false }),
  jwt: (sub: string, scopes: string[]): Principal => ({ kind: 'jwt', userId: sub, scopes, scopesEnforced: true, selfScoped: false }),
};

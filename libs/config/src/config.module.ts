import { DynamicModule, Global, Module } from '@nestjs/common';

import { Env, loadEnv } from './env';

@Global()
@Module({})
export class ConfigModule {
  /** Provides the validated Env; tests and the quickstart pass their own. */
  static forRoot(env: Env = loadEnv()): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: Env, useValue: env }], exports: [Env] };
  }
}

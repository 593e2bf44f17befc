import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { TraceEntity } from './trace.entity';
import { TraceRepository } from './trace.repository';
import { TracesService } from './traces.service';
import { Tracing, TRACING_SERVICE } from './tracing';

@Module({})
export class TracesModule {
  /** `serviceName`: what exported spans name as their service unless OTEL_SERVICE_NAME is set. */
  static forRoot(serviceName: string): DynamicModule {
    return {
      module: TracesModule,
      global: true,
      imports: [TypeOrmModule.forFeature([TraceEntity])],
      providers: [{ provide: TRACING_SERVICE, useValue: serviceName }, Tracing, TraceRepository, TracesService],
      exports: [Tracing, TracesService],
    };
  }
}

import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { Registry } from 'prom-client';

import { ADMIN_SCOPE } from '@app/access';
import { RequireScope } from '@app/auth';
import { MetricsRegistry } from '@app/health';
import { QueueMetricsService } from '@app/queue';
import { ScheduleMetricsService } from '@app/schedules';

@ApiTags('discovery')
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly queue: QueueMetricsService,
    private readonly schedules: ScheduleMetricsService,
    private readonly process: MetricsRegistry,
  ) {}

  @Get()
  @RequireScope(ADMIN_SCOPE)
  @Header('cache-control', 'no-store')
  @ApiOperation({
    summary:
      'Prometheus text: queue depth by status, oldest queued age, processed and failed attempts of all workers, skipped schedule fires; this api process’s HTTP request durations by route and status, process and event-loop figures',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus exposition format 0.0.4' })
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    await Promise.all([this.queue.refresh(), this.schedules.refresh()]);
    const registry = Registry.merge([this.queue.registry, this.schedules.registry, this.process]);
    await reply.header('content-type', registry.contentType).send(await registry.metrics());
  }
}

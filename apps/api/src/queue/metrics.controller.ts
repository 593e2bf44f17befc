import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { Registry } from 'prom-client';

import { ADMIN_SCOPE } from '@app/access';
import { RequireScope } from '@app/auth';
import { QueueMetricsService } from '@app/queue';
import { ScheduleMetricsService } from '@app/schedules';

@ApiTags('queue')
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly queue: QueueMetricsService,
    private readonly schedules: ScheduleMetricsService,
  ) {}

  @Get()
  @RequireScope(ADMIN_SCOPE)
  @Header('cache-control', 'no-store')
  @ApiOperation({
    summary:
      'Prometheus text: queue depth by status, oldest queued age, processed and failed attempts of all workers, skipped schedule fires',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus exposition format 0.0.4' })
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    await Promise.all([this.queue.refresh(), this.schedules.refresh()]);
    const registry = Registry.merge([this.queue.registry, this.schedules.registry]);
    await reply.header('content-type', registry.contentType).send(await registry.metrics());
  }
}

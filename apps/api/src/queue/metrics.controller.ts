import { Controller, Get, Header, Logger, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { Registry } from 'prom-client';

import { ADMIN_SCOPE } from '@app/access';
import { RequireScope } from '@app/auth';
import { isDatabaseUnavailable } from '@app/database';
import { MetricsRegistry } from '@app/health';
import { QueueMetricsService } from '@app/queue';
import { ScheduleMetricsService } from '@app/schedules';

@ApiTags('discovery')
@Controller('metrics')
export class MetricsController {
  private readonly log = new Logger(MetricsController.name);

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
    // The queue and schedule figures come from the database; this process's own do not, and an outage is when
    // they matter: without the database the scrape answers them alone (the others absent, not stale).
    const fromDatabase = await Promise.all([this.queue.refresh(), this.schedules.refresh()]).then(
      () => [this.queue.registry, this.schedules.registry],
      (error: unknown) => {
        if (!isDatabaseUnavailable(error)) {
          throw error;
        }
        this.log.warn({ err: error }, 'metrics scraped without the queue and schedule figures: the database is unavailable');
        return [];
      },
    );
    const registry = Registry.merge([...fromDatabase, this.process]);
    await reply.header('content-type', registry.contentType).send(await registry.metrics());
  }
}

import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';

import { ADMIN_SCOPE } from '@app/access';
import { RequireScope } from '@app/auth';

import { MetricsScrape } from './metrics-scrape';

@ApiTags('discovery')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsScrape) {}
  @Get()
  @RequireScope(ADMIN_SCOPE)
  @ApiOperation({
    summary:
      'Prometheus text: queue depth by status, oldest queued age, processed and failed attempts of all workers, skipped schedule fires; this api process’s HTTP request durations by route and status, process and event-loop figures',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus exposition format 0.0.4' })
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const { contentType, body } = await this.metrics.text();
    await reply.header('content-type', contentType).send(body);
  }
}

import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';

import { ADMIN_SCOPE } from '@app/access';
import { RequireScope } from '@app/auth';
import { QueueMetricsService } from '@app/queue';

@ApiTags('queue')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: QueueMetricsService) {}

  @Get()
  @RequireScope(ADMIN_SCOPE)
  @Header('cache-control', 'no-store')
  @ApiOperation({ summary: 'Prometheus text: queue depth by status, oldest queued age, processed and failed attempts of all workers' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus exposition format 0.0.4' })
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const body = await this.metrics.render();
    await reply.header('content-type', this.metrics.contentType).send(body);
  }
}

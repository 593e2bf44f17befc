import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
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
  // The scrape alone is text: its 401 and 403 are the JSON error body every route answers.
  @ApiOkResponse({
    description: 'Prometheus exposition format 0.0.4',
    content: {
      'text/plain': {
        schema: { type: 'string' },
        example: '# HELP queue_jobs Queue jobs by status\n# TYPE queue_jobs gauge\nqueue_jobs{status="queued"} 3\n',
      },
    },
  })
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const { contentType, body } = await this.metrics.text();
    await reply.header('content-type', contentType).send(body);
  }
}

import { Controller, Get, Logger } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';

import { Public } from '@app/auth';
import { ErrorBodyDto, RequestErrorCode, RequestException } from '@app/errors';
import { DatabaseHealth, DatabaseState, NOT_READY_DETAIL } from '@app/health';

import { ReadinessDto } from './readiness.dto';

/** For orchestrators: /health says the process is alive, /readyz that it can serve (the database answers). */
@ApiTags('discovery')
@Controller()
export class ReadinessController {
  private readonly logger = new Logger('Readiness');
  /** What the last probe found: a change is logged once, with its reason (kubelet's events show no body). */
  private lastState: DatabaseState = 'ok';

  constructor(private readonly database: DatabaseHealth) {}

  @Get('readyz')
  @Public()
  @ApiOperation({ summary: 'Readiness probe: 200 while the database answers and is fully migrated, 503 otherwise' })
  @ApiOkResponse({ type: ReadinessDto })
  @ApiServiceUnavailableResponse({ type: ErrorBodyDto, description: 'The database is unreachable or migrations are pending' })
  async readiness(): Promise<ReadinessDto> {
    const state = await this.database.check();
    if (state !== this.lastState) {
      if (state === 'ok') {
        this.logger.log('api ready again');
      } else {
        this.logger.warn(`api not ready: ${NOT_READY_DETAIL[state].replace(/^Not ready: /, '')}`);
      }
      this.lastState = state;
    }
    if (state !== 'ok') {
      throw new RequestException(RequestErrorCode.DatabaseUnavailable, NOT_READY_DETAIL[state]);
    }
    return { status: 'ok', checks: { database: 'ok' } };
  }
}

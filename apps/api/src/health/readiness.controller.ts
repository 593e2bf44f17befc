import { BeforeApplicationShutdown, Controller, Get, Logger } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';

import { Public } from '@app/auth';
import { ErrorBodyDto, RequestErrorCode, RequestException } from '@app/errors';
import { DatabaseHealth, DatabaseState, NOT_READY_DETAIL } from '@app/health';

import { ReadinessDto } from './readiness.dto';

/** What /readyz answers from the moment the api is told to stop. */
const STOPPING_DETAIL = 'Not ready: the api is stopping';

/**
 * For orchestrators: /health says the process is alive, /readyz that it can serve (the database answers, and the
 * api is not stopping: a load balancer without a preStop delay stops sending it new work at the signal).
 */
@ApiTags('discovery')
@Controller()
export class ReadinessController implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Readiness');
  /** What the last probe found: a change is logged once, with its reason (kubelet's events show no body). */
  private lastState: DatabaseState = 'ok';
  private stopping = false;

  beforeApplicationShutdown(): void {
    this.stopping = true;
  }

  constructor(private readonly database: DatabaseHealth) {}

  @Get('readyz')
  @Public()
  @ApiOperation({
    summary: 'Readiness probe: 200 while the database answers and is fully migrated, 503 otherwise and once the api is stopping',
  })
  @ApiOkResponse({ type: ReadinessDto })
  @ApiServiceUnavailableResponse({
    type: ErrorBodyDto,
    description: 'The database is unreachable, migrations are pending, or the api is stopping',
  })
  async readiness(): Promise<ReadinessDto> {
    if (this.stopping) {
      throw new RequestException(RequestErrorCode.DatabaseUnavailable, STOPPING_DETAIL);
    }
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

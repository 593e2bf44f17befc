import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';

import { Principal } from '@app/access';
import { CurrentPrincipal, RequireScope } from '@app/auth';
import { ErrorBodyDto, ValidationErrorBodyDto } from '@app/errors';
import { ListTracesQuery, TraceDto, TraceIdParams, TracePageDto, TracesService } from '@app/traces';

@ApiTags('traces')
@ApiUnprocessableEntityResponse({ type: ValidationErrorBodyDto, description: 'Validation error' })
@Controller('traces')
export class TracesController {
  constructor(private readonly traces: TracesService) {}

  @Get()
  @RequireScope('traces:read')
  @ApiOperation({ summary: "Traces of the caller's runs (self-scoped), newest first, each with its run's spans" })
  @ApiOkResponse({ type: TracePageDto })
  list(@CurrentPrincipal() caller: Principal, @Query() query: ListTracesQuery): Promise<TracePageDto> {
    return this.traces.list(caller, query);
  }

  @Get(':trace_id')
  @RequireScope('traces:read')
  @ApiOperation({
    summary: 'One trace with its spans',
    description:
      "Several runs can share a trace id (sent with one caller's traceparent): the answer is the caller's first run under it, with the spans of every run of that run's user under it, never another user's.",
  })
  @ApiOkResponse({ type: TraceDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  get(@CurrentPrincipal() caller: Principal, @Param() params: TraceIdParams): Promise<TraceDto> {
    return this.traces.get(caller, params.trace_id);
  }
}

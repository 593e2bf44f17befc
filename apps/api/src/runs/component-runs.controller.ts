import { Body, Controller, Get, Headers, HttpCode, HttpStatus, Param, Post, Res, Type } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiConsumes,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiUnprocessableEntityResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { FastifyReply } from 'fastify';

import { Principal } from '@app/access';
import { CurrentPrincipal, RequireScope } from '@app/auth';
import { ErrorBodyDto, ValidationErrorBodyDto } from '@app/errors';
import { AcceptedRunDto, ComponentDto, ComponentKind, RunDto, RunIdParams, RunsService, StartRunDto } from '@app/runs';

import { sendEventStream } from './event-stream';

/** What stream=true answers, as /docs shows it: the last event's data is the run, as the JSON answer has it. */
const STREAM_EXAMPLE = (kind: ComponentKind): string =>
  [
    `event: RunStarted\ndata: {"run_id":"9b2f…","session_id":"4c1e…","component_type":"${kind}","component_id":"…","created_at":1764000000}`,
    'event: RunContent\ndata: {"run_id":"9b2f…","content":"Hel"}',
    'event: RunContent\ndata: {"run_id":"9b2f…","content":"lo!"}',
    'event: RunCompleted\ndata: {"run_id":"9b2f…","status":"completed","content":"Hello!", …}',
    '(or RunError / RunCancelled, with the run)',
  ].join('\n\n');

interface ComponentRoute {
  kind: ComponentKind;
  /** URL segment and scope resource: agents, teams, workflows. */
  resource: string;
  /** Path parameter naming the component: agent_id, team_id, workflow_id. */
  param: string;
}

/**
 * The run endpoints, identical under /agents, /teams and /workflows: one
 * definition, instantiated per kind so each gets its own path, parameter name and scopes.
 */
function componentRunsController({ kind, resource, param }: ComponentRoute): Type<unknown> {
  const read = `${resource}:read`;
  const run = `${resource}:run`;

  // On the routes that take it only: the list route has no id in its path.
  const ComponentParam = () => ApiParam({ name: param, description: `Id of the ${kind}` });

  @ApiTags(resource)
  @ApiUnprocessableEntityResponse({ type: ValidationErrorBodyDto, description: 'Validation error' })
  @Controller(resource)
  class ComponentRunsController {
    constructor(readonly runs: RunsService) {}

    @Get()
    @RequireScope(read, { listedPerComponent: true })
    @ApiOperation({
      summary: `List the ${resource}`,
      description: `With ${read}, every ${kind}; with grants for some (\`${resource}:<id>:read\`), those.`,
    })
    @ApiOkResponse({ type: [ComponentDto] })
    list(@CurrentPrincipal() caller: Principal): ComponentDto[] {
      return this.runs.componentsFor(caller, kind, read);
    }

    @Get(`:${param}`)
    @ComponentParam()
    @RequireScope(read, { componentParam: param })
    @ApiOperation({ summary: `One ${kind}` })
    @ApiOkResponse({ type: ComponentDto })
    @ApiNotFoundResponse({ type: ErrorBodyDto })
    get(@Param(param) id: string): ComponentDto {
      return this.runs.getComponent(kind, id);
    }

    @Post(`:${param}/runs`)
    @ComponentParam()
    @RequireScope(run, { componentParam: param })
    @ApiOperation({ summary: `Run the ${kind}: finished run (200), text/event-stream (stream=true), or queued (202, background=true)` })
    @ApiConsumes('application/json', 'application/x-www-form-urlencoded', 'multipart/form-data')
    @ApiBody({ type: StartRunDto, examples: { run: { summary: 'A run', value: { message: 'Hello!' } } } })
    @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'At most 512 characters; a repeated key returns the earlier run' })
    @ApiHeader({ name: 'traceparent', required: false, description: 'W3C trace context: the run’s trace continues the caller’s' })
    @ApiOkResponse({
      description: 'The finished run; with stream=true, the run as server-sent events instead',
      content: {
        'application/json': { schema: { $ref: getSchemaPath(RunDto) } },
        'text/event-stream': { schema: { type: 'string' }, example: STREAM_EXAMPLE(kind) },
      },
    })
    @ApiAcceptedResponse({ type: AcceptedRunDto, description: 'background=true: the run is queued' })
    @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'stream=true with background=true' })
    @ApiNotFoundResponse({
      type: ErrorBodyDto,
      description: 'Unknown component, or a session_id of another user (an unused id starts a new session)',
    })
    @ApiConflictResponse({ type: ErrorBodyDto, description: 'Idempotency key already used for another component' })
    @ApiServiceUnavailableResponse({ type: ErrorBodyDto, description: 'background=true on a replica without the queue' })
    async start(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Body() body: StartRunDto,
      @Headers('idempotency-key') idempotencyKeyHeader: string | undefined,
      @Headers('traceparent') traceparent: string | undefined,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      const request = { ...body, idempotencyKeyHeader, traceparent };
      if (request.background) {
        await reply.status(HttpStatus.ACCEPTED).send(await this.runs.enqueue(caller, kind, id, request));
      } else if (request.stream) {
        await sendEventStream(reply, (send) => this.runs.stream(caller, kind, id, request, send));
      } else {
        await reply.status(HttpStatus.OK).send(await this.runs.run(caller, kind, id, request));
      }
    }

    @Get(`:${param}/runs/:run_id`)
    @ComponentParam()
    @RequireScope(run, { componentParam: param })
    @ApiOperation({ summary: 'The run: status, content, error, timestamps' })
    @ApiOkResponse({ type: RunDto })
    @ApiNotFoundResponse({ type: ErrorBodyDto })
    getRun(@CurrentPrincipal() caller: Principal, @Param(param) id: string, @Param() { run_id }: RunIdParams): Promise<RunDto> {
      return this.runs.get(caller, kind, id, run_id);
    }

    @Post(`:${param}/runs/:run_id/cancel`)
    @HttpCode(HttpStatus.OK)
    @ComponentParam()
    @RequireScope(run, { componentParam: param })
    @ApiOperation({ summary: 'Record a cancellation intent: a queued run is cancelled at once, a running one at its next checkpoint' })
    @ApiOkResponse({ type: RunDto, description: 'The run after the request' })
    @ApiNotFoundResponse({ type: ErrorBodyDto })
    cancel(@CurrentPrincipal() caller: Principal, @Param(param) id: string, @Param() { run_id }: RunIdParams): Promise<RunDto> {
      return this.runs.cancel(caller, kind, id, run_id);
    }
  }
  Object.defineProperty(ComponentRunsController, 'name', { value: `${kind[0].toUpperCase()}${kind.slice(1)}RunsController` });
  return ComponentRunsController;
}

export const AgentRunsController = componentRunsController({ kind: 'agent', resource: 'agents', param: 'agent_id' });
export const TeamRunsController = componentRunsController({ kind: 'team', resource: 'teams', param: 'team_id' });
export const WorkflowRunsController = componentRunsController({ kind: 'workflow', resource: 'workflows', param: 'workflow_id' });

import {
  applyDecorators,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  Req,
  Res,
  Type,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiExcludeEndpoint,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import { FastifyReply, FastifyRequest } from 'fastify';

import { A2ACall, A2AEndpoint, JSON_RPC_BAD_JSON, RefusedMethod } from '@app/a2a';
import { Principal } from '@app/access';
import { BodyScope, CurrentPrincipal, requiredScope, RequireScope, ScopeFromBody, Unschedulable } from '@app/auth';
import { ErrorBodyDto } from '@app/errors';
import { ComponentKind } from '@app/runs';

import { AnswersBadJson } from '../errors/http-exception.filter';
import { DATABASE_UNAVAILABLE_DETAIL } from '../errors/render-error';

/** The HTTP+JSON binding is A2A v1.0, which a request without an A2A-Version header is not. */
const HTTP_JSON_UNSCHEDULABLE =
  "A schedule cannot call A2A's HTTP+JSON binding (it needs an A2A-Version header a fire does not send): " +
  "schedule the component's run route or its A2A JSON-RPC URL instead";

/** The binding's media type, for its answers and its errors. */
const A2A_JSON = 'application/a2a+json';
/** A2A's error object, as the HTTP+JSON binding answers it. */
const A2A_ERROR = {
  type: 'object',
  properties: {
    error: { type: 'object', properties: { code: { type: 'integer' }, status: { type: 'string' }, message: { type: 'string' } } },
  },
};

/** What the HTTP+JSON routes document: the version header they need, their answers (a stream for SendStreamingMessage). */
function HttpJsonBinding(kind: ComponentKind, { streams = false } = {}): MethodDecorator {
  const runId = '3f2a1c9e-5b7d-4e8f-9a0b-1c2d3e4f5a6b';
  return applyDecorators(
    ApiHeader({
      name: 'A2A-Version',
      required: true,
      description: 'The HTTP+JSON binding is A2A v1.0: send 1.0',
      schema: { default: '1.0' },
    }),
    streams
      ? ApiOkResponse({
          description: 'A text/event-stream of A2A v1.0 StreamResponse events (the task, its status and artifact updates)',
          content: { 'text/event-stream': { schema: { type: 'string' } } },
        })
      : ApiOkResponse({ description: 'The A2A v1.0 answer: a Task or a Message', content: { [A2A_JSON]: { schema: { type: 'object' } } } }),
    ApiBadRequestResponse({
      description: 'An A2A error, e.g. VERSION_NOT_SUPPORTED without A2A-Version: 1.0',
      content: { [A2A_JSON]: { schema: A2A_ERROR } },
    }),
    ApiNotFoundResponse({
      description: 'No such component (the error body every route answers), or no such task (an A2A error)',
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ErrorBodyDto' },
          example: { detail: `${kind[0].toUpperCase()}${kind.slice(1)} 'no-such-${kind}' not found` },
        },
        [A2A_JSON]: {
          schema: A2A_ERROR,
          example: { error: { code: 404, status: 'NOT_FOUND', message: `Run '${runId}' not found` } },
        },
      },
    }),
    ApiServiceUnavailableResponse({
      description:
        'The database is unavailable, try again: the error body every route answers (a credential that cannot be checked), or an A2A error',
      content: {
        'application/json': { schema: { $ref: '#/components/schemas/ErrorBodyDto' }, example: { detail: DATABASE_UNAVAILABLE_DETAIL } },
        [A2A_JSON]: { schema: A2A_ERROR, example: { error: { code: 503, status: 'UNAVAILABLE', message: DATABASE_UNAVAILABLE_DETAIL } } },
      },
    }),
  );
}

/**
 * An HTTP+JSON task path segment, `<task id>:<custom method>`: the task and the method it names (`cancel` or
 * `subscribe`), or the whole segment as the task and no method. The route's scope and its handler both read it here.
 */
function taskPath(segment: string): { taskId: string; method: 'cancel' | 'subscribe' | null } {
  const [, taskId, method] = /^(.+):(cancel|subscribe)$/.exec(segment) ?? [];
  return taskId ? { taskId, method: method as 'cancel' | 'subscribe' } : { taskId: segment, method: null };
}

/** A v1.0 message to send over HTTP+JSON: the text is the run's input. */
const SEND_MESSAGE_EXAMPLE = { message: { messageId: 'message-1', role: 'ROLE_USER', parts: [{ text: 'Hello!' }] } };

/** The body of SendMessage and SendStreamingMessage over HTTP+JSON, with its example. */
function SendMessageBody(): MethodDecorator {
  return ApiBody({ schema: { type: 'object' }, examples: { send: { summary: 'A message', value: SEND_MESSAGE_EXAMPLE } } });
}

/** The same over JSON-RPC as v0.3 speaks it (no A2A-Version header): Swagger UI sends no header either. */
const JSON_RPC_EXAMPLE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: 'message-1', role: 'user', parts: [{ kind: 'text', text: 'Hello!' }] } },
};

interface A2ARoute {
  kind: ComponentKind;
  /** URL segment and scope resource: agents, teams, workflows. */
  resource: string;
  /** Path parameter naming the component: agent_id, team_id, workflow_id. */
  param: string;
}

/**
 * The A2A routes of one component kind: the agent card, JSON-RPC at the component's A2A URL,
 * and the HTTP+JSON binding beneath it. Each checks the scope of the REST route it matches: reading needs
 * `<resource>:read`, sending and cancelling `<resource>:run`; a workflow's task routes answer UnsupportedOperation.
 */
function a2aController({ kind, resource, param }: A2ARoute): Type<unknown> {
  const read = `${resource}:read`;
  const run = `${resource}:run`;
  /** One URL, several methods: the scope follows the JSON-RPC method, narrowed to the component. */
  const jsonRpcScope: BodyScope = (params, body) =>
    requiredScope({ scope: `${resource}:${A2AEndpoint.actionOf(body)}`, componentParam: param }, params);
  const ComponentParam = () => ApiParam({ name: param, description: `Id of the ${kind}` });
  /**
   * A method of the HTTP+JSON binding this service does not offer: under its JSON-RPC twin's scope, answered with
   * the protocol's error. Left out of the API docs, which list what the service does.
   */
  const NotOffered = (scope: string) =>
    applyDecorators(ApiExcludeEndpoint(), Unschedulable(HTTP_JSON_UNSCHEDULABLE), RequireScope(scope, { componentParam: param }));
  /**
   * GetTask and CancelTask over HTTP+JSON: a workflow has no tasks to read back, so it answers them with the protocol's
   * error as over JSON-RPC (not a 404), and the API docs leave them out of its routes.
   */
  const TaskRoute = (): MethodDecorator => (kind === 'workflow' ? ApiExcludeEndpoint() : () => undefined);
  /** `POST .../tasks/{id}:cancel` changes the task (`:run`); `.../tasks/{id}:subscribe` only follows it (`:read`), as over JSON-RPC. */
  const taskMethodScope: BodyScope = (params) =>
    requiredScope({ scope: taskPath(String(params.task_id)).method === 'subscribe' ? read : run, componentParam: param }, params);

  @ApiTags('a2a')
  @Controller(`a2a/${resource}`)
  class A2AController {
    constructor(readonly a2a: A2AEndpoint) {}

    @Get(`:${param}/.well-known/agent-card.json`)
    @ComponentParam()
    @RequireScope(read, { componentParam: param })
    @ApiOperation({
      summary: `The ${kind}'s A2A agent card: JSON-RPC and HTTP+JSON interfaces at /a2a/${resource}/{id}, bearer scheme`,
      description:
        'With `A2A-Version: 1.0` (the SDK’s v1.0 client sends it) the v1.0 card. Without the header, or naming 0.3, the ' +
        'v0.3 shape a v0.3 client reads (`url`, `preferredTransport` and `protocolVersion` of the v0.3 JSON-RPC interface), ' +
        'with the v1.0 `supportedInterfaces` in it too.',
    })
    @ApiHeader({ name: 'A2A-Version', required: false, description: 'The card’s protocol version: 1.0, or none for v0.3' })
    @ApiOkResponse({ description: 'An A2A AgentCard (v1.0, or v0.3 with the v1.0 interfaces)', schema: { type: 'object' } })
    @ApiNotFoundResponse({ description: 'No such component', type: ErrorBodyDto })
    card(
      @Param(param) id: string,
      @Headers('a2a-version') version: string | undefined,
      @Res({ passthrough: true }) reply: FastifyReply,
    ): Promise<unknown> {
      reply.header('Vary', 'A2A-Version');
      return this.a2a.card(kind, resource, id, version);
    }

    @Post(`:${param}`)
    @ScopeFromBody(
      jsonRpcScope,
      kind === 'workflow'
        ? `${run} (SendMessage, SendStreamingMessage)`
        : `${run} (SendMessage, SendStreamingMessage, CancelTask, any other method) or ${read} (GetTask and the other reads)`,
    )
    @Unschedulable(A2AEndpoint.unfitForFires)
    @AnswersBadJson(JSON_RPC_BAD_JSON)
    @HttpCode(200)
    @ComponentParam()
    @ApiOperation({
      summary:
        kind === 'workflow'
          ? 'A2A JSON-RPC 2.0: SendMessage, SendStreamingMessage'
          : 'A2A JSON-RPC 2.0: SendMessage, SendStreamingMessage, GetTask, CancelTask',
      description:
        'With `A2A-Version: 1.0` the methods go by their v1.0 names (SendMessage); without it, as A2A v0.3 (message/send, message/stream, tasks/get, tasks/cancel). ' +
        "A body that is not JSON is answered with JSON-RPC's Parse error (-32700).",
    })
    @ApiBody({ schema: { type: 'object' }, examples: { send: { summary: 'message/send (v0.3)', value: JSON_RPC_EXAMPLE } } })
    @ApiOkResponse({
      description: 'The JSON-RPC response, or a text/event-stream of them for SendStreamingMessage',
      content: { 'application/json': { schema: { type: 'object' } }, 'text/event-stream': { schema: { type: 'string' } } },
    })
    @ApiNotFoundResponse({ description: 'No such component', type: ErrorBodyDto })
    async jsonRpc(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.serve(reply, id, caller, request, (call) => this.a2a.jsonRpc(call, request.body, reply.raw));
    }

    @Post(`:${param}/message::send`)
    @Unschedulable(HTTP_JSON_UNSCHEDULABLE)
    @ComponentParam()
    @RequireScope(run, { componentParam: param })
    @ApiOperation({ summary: 'A2A HTTP+JSON SendMessage' })
    @HttpJsonBinding(kind)
    @SendMessageBody()
    async send(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.serve(reply, id, caller, request, (call) => this.a2a.restSend(call, request.body, false, reply.raw));
    }

    @Post(`:${param}/message::stream`)
    @Unschedulable(HTTP_JSON_UNSCHEDULABLE)
    @ComponentParam()
    @RequireScope(run, { componentParam: param })
    @ApiOperation({ summary: 'A2A HTTP+JSON SendStreamingMessage (text/event-stream)' })
    @HttpJsonBinding(kind, { streams: true })
    @SendMessageBody()
    async stream(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.serve(reply, id, caller, request, (call) => this.a2a.restSend(call, request.body, true, reply.raw));
    }

    @Get(`:${param}/extendedAgentCard`)
    @NotOffered(read)
    async extendedAgentCard(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.refuse('getAuthenticatedExtendedAgentCard', reply, id, caller, request);
    }

    @Get(`:${param}/tasks/:task_id`)
    @TaskRoute()
    @Unschedulable(HTTP_JSON_UNSCHEDULABLE)
    @ComponentParam()
    @RequireScope(read, { componentParam: param })
    @ApiOperation({ summary: 'A2A HTTP+JSON GetTask: the run as a task (task id = run id, context id = session id)' })
    @ApiQuery({
      name: 'historyLength',
      required: false,
      schema: { type: 'integer', minimum: 0 },
      description: 'At most this many messages of the history (0: none); a value that is not an integer is a 400',
    })
    @HttpJsonBinding(kind)
    async getTask(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Param('task_id') taskId: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      if (taskPath(taskId).method === 'subscribe') {
        // SubscribeToTask by GET, as the SDK's own server takes it too: a read, refused as over JSON-RPC.
        await this.refuse('resubscribe', reply, id, caller, request);
        return;
      }
      // Read raw: the binding's own parameter, parsed (and refused) as the SDK's transport does.
      const { historyLength } = request.query as { historyLength?: string };
      await this.serve(reply, id, caller, request, (call) => this.a2a.restGetTask(call, taskId, historyLength, reply.raw));
    }

    @Post(`:${param}/tasks/:task_id`)
    @TaskRoute()
    @Unschedulable(HTTP_JSON_UNSCHEDULABLE)
    @ComponentParam()
    @ApiParam({
      name: 'task_id',
      description:
        "The task id (the run id) followed by the binding's custom method: `<run id>:cancel`; `<run id>:subscribe` (SubscribeToTask, a read) is answered UnsupportedOperation, as over JSON-RPC",
    })
    @HttpJsonBinding(kind)
    @ScopeFromBody(taskMethodScope, `${run} (:cancel) or ${read} (:subscribe)`)
    @ApiOperation({ summary: 'A2A HTTP+JSON CancelTask: POST .../tasks/{task_id}:cancel' })
    async cancelTask(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Param('task_id') taskAndMethod: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      const { taskId, method } = taskPath(taskAndMethod);
      if (method === null) {
        throw new NotFoundException(`Cannot POST ${request.url}`);
      }
      if (method === 'subscribe') {
        await this.refuse('resubscribe', reply, id, caller, request);
        return;
      }
      await this.serve(reply, id, caller, request, (call) => this.a2a.restCancelTask(call, taskId, reply.raw));
    }

    @Get(`:${param}/tasks`)
    @NotOffered(read)
    async listTasks(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.refuse('listTasks', reply, id, caller, request);
    }

    // One path per route: the route table schedules consult reads a route's first path only.
    @Get(`:${param}/tasks/:task_id/pushNotificationConfigs`)
    @NotOffered(read)
    async listPushNotificationConfigs(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.refuse('listTaskPushNotificationConfigs', reply, id, caller, request);
    }

    @Get(`:${param}/tasks/:task_id/pushNotificationConfigs/:config_id`)
    @NotOffered(read)
    async getPushNotificationConfig(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.refuse('getTaskPushNotificationConfig', reply, id, caller, request);
    }

    @Post(`:${param}/tasks/:task_id/pushNotificationConfigs`)
    @NotOffered(run)
    async createPushNotificationConfig(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.refuse('createTaskPushNotificationConfig', reply, id, caller, request);
    }

    @Delete(`:${param}/tasks/:task_id/pushNotificationConfigs/:config_id`)
    @NotOffered(run)
    async deletePushNotificationConfig(
      @CurrentPrincipal() caller: Principal,
      @Param(param) id: string,
      @Req() request: FastifyRequest,
      @Res() reply: FastifyReply,
    ): Promise<void> {
      await this.refuse('deleteTaskPushNotificationConfig', reply, id, caller, request);
    }

    async refuse(method: RefusedMethod, reply: FastifyReply, id: string, principal: Principal, request: FastifyRequest): Promise<void> {
      await this.serve(reply, id, principal, request, (call) => this.a2a.restRefuse(call, method, reply.raw));
    }

    /** Hijacks the reply once the component is known to exist: an unknown one is the REST 404. */
    async serve(
      reply: FastifyReply,
      id: string,
      principal: Principal,
      request: FastifyRequest,
      write: (call: A2ACall) => Promise<void>,
    ): Promise<void> {
      this.a2a.assertComponent(kind, resource, id);
      reply.raw.setHeader('x-request-id', request.id);
      reply.hijack();
      await write({ kind, resource, id, principal, headers: request.headers });
    }
  }

  Object.defineProperty(A2AController, 'name', { value: `${kind[0].toUpperCase()}${kind.slice(1)}A2AController` });
  return A2AController;
}

export const AgentA2AController = a2aController({ kind: 'agent', resource: 'agents', param: 'agent_id' });
export const TeamA2AController = a2aController({ kind: 'team', resource: 'teams', param: 'team_id' });
export const WorkflowA2AController = a2aController({ kind: 'workflow', resource: 'workflows', param: 'workflow_id' });

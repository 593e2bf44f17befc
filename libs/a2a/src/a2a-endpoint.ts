import { IncomingHttpHeaders, ServerResponse } from 'node:http';

import {
  A2A_CONTENT_TYPE,
  A2A_VERSION_HEADER,
  AgentCard,
  Extensions,
  formatSSEErrorEvent,
  formatSSEEvent,
  HTTP_EXTENSION_HEADER,
  SendMessageRequest,
  SendMessageResponse,
  SSE_HEADERS,
  StreamResponse,
  Task,
} from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import {
  A2A_ERROR_CODE,
  A2AError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  restStatusFor,
  toRestErrorBody,
} from '@a2a-js/sdk/errors';
import { defaultServerCallContextBuilder, JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import { Inject, Injectable } from '@nestjs/common';

import { Principal } from '@app/access';
import { Authenticator } from '@app/auth';
import { Env, SERVICE_VERSION } from '@app/config';
import { ErrorRenderer } from '@app/errors';
import { ComponentKind, keepStreamAlive, RunsService } from '@app/runs';

import { agentCard, legacyAgentCard } from './agent-card';
import { PrincipalUser, RunsRequestHandler, UnavailableError } from './runs-request-handler';

export const A2A_ERROR_RENDERER = Symbol('A2AErrorRenderer');

/** A component's A2A routes: its kind (and URL segment), its id, and the caller the route authenticated. */
export interface A2ACall {
  kind: ComponentKind;
  resource: string;
  id: string;
  principal: Principal;
  headers: IncomingHttpHeaders;
}

/**
 * JSON-RPC methods that only read need the kind's `:read` scope (as in agno's A2A scope map). Every
 * other method, an unknown one included, needs `:run`: a method the map does not name is never cheaper.
 */
const READ_METHODS = new Set([
  'GetTask',
  'ListTasks',
  'SubscribeToTask',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'GetExtendedAgentCard',
  // The same methods under their v0.3 names.
  'tasks/get',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'agent/getAuthenticatedExtendedCard',
]);

/** Every JSON-RPC method each protocol version defines. */
const METHODS = {
  v10: new Set([
    'SendMessage',
    'SendStreamingMessage',
    'GetTask',
    'ListTasks',
    'CancelTask',
    'SubscribeToTask',
    'CreateTaskPushNotificationConfig',
    'GetTaskPushNotificationConfig',
    'ListTaskPushNotificationConfigs',
    'DeleteTaskPushNotificationConfig',
    'GetExtendedAgentCard',
  ]),
  v03: new Set([
    'message/send',
    'message/stream',
    'tasks/get',
    'tasks/cancel',
    'tasks/resubscribe',
    'tasks/pushNotificationConfig/set',
    'tasks/pushNotificationConfig/get',
    'tasks/pushNotificationConfig/list',
    'tasks/pushNotificationConfig/delete',
    'agent/getAuthenticatedExtendedCard',
  ]),
};

/** The methods that take a message, v1.0's and v0.3's. */
const SEND_METHODS = new Set(['SendMessage', 'SendStreamingMessage', 'message/send', 'message/stream']);

/**
 * What the SDKs read of a message without checking its JSON types, checked here. The v1.0 SDK fails on a null
 * part with a TypeError, which it answers as an Internal error in the TypeError's words (the v0.3 layer refuses
 * it); and both turn a text or message id of another type into a string, so `{"text": {"a": 1}}` would run as
 * "[object Object]".
 */
function assertMessageTypes(params: unknown): void {
  const message = (params as { message?: { parts?: unknown; messageId?: unknown } } | undefined)?.message;
  if (message?.messageId !== undefined && typeof message.messageId !== 'string') {
    throw new RequestMalformedError('message.messageId must be a string');
  }
  const parts = message?.parts;
  if (!Array.isArray(parts)) {
    return;
  }
  if (parts.some((part) => typeof part !== 'object' || part === null || Array.isArray(part))) {
    throw new RequestMalformedError('Each part must be an object');
  }
  if (parts.some((part: { text?: unknown }) => part.text !== undefined && typeof part.text !== 'string')) {
    throw new RequestMalformedError("A text part's text must be a string");
  }
}

/** v0.3 methods answered with an event stream. */
const STREAMING_METHODS = new Set(['message/stream', 'tasks/resubscribe']);

/** The request handler's methods that only refuse: what the HTTP+JSON routes of methods not offered call. */
export type RefusedMethod =
  | 'resubscribe'
  | 'listTasks'
  | 'getAuthenticatedExtendedAgentCard'
  | 'createTaskPushNotificationConfig'
  | 'getTaskPushNotificationConfig'
  | 'listTaskPushNotificationConfigs'
  | 'deleteTaskPushNotificationConfig';

/** A request without an A2A-Version header is a v0.3 client's (the protocol's rule), as is one naming 0.3. */
function isVersion03(requestedVersion: string): boolean {
  return /^0\.3(\.\d+)?$/.test(requestedVersion);
}

/** One JSON-RPC request: a JSON object. The SDK would also parse a JSON string holding one, which the scope check never saw. */
function isRequestObject(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}

/** JSON-RPC's answer to a body that is JSON but not one request object (an array, a string): Invalid Request. */
const JSON_RPC_INVALID_REQUEST = {
  jsonrpc: '2.0',
  id: null,
  error: { code: -32600, message: 'Invalid Request: the body must be one JSON-RPC request object' },
};

/** A request's id when it is one JSON-RPC allows (a string, an integer or null), else undefined. */
function validId(id: unknown): string | number | null | undefined {
  return id === null || typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : undefined;
}

/**
 * Why a request object is no A2A request, or null: JSON-RPC 2.0 with a method named, and an id unless `idOptional`,
 * since every A2A method answers (a notification, without one, would get no answer). Checked here because the SDK's
 * v1.0 transport answers these with Invalid params, and echoes an id JSON-RPC does not allow.
 */
function invalidRequest(body: Record<string, unknown>, idOptional: boolean): string | null {
  if (body.jsonrpc !== '2.0') {
    return 'jsonrpc must be "2.0"';
  }
  if (typeof body.method !== 'string' || body.method === '') {
    return 'method must name a method';
  }
  if (!('id' in body)) {
    return idOptional ? null : 'an A2A request needs an id (every method answers; notifications are not served)';
  }
  return validId(body.id) === undefined ? 'id must be a string, an integer or null' : null;
}

/**
 * JSON-RPC's answers to a body the api does not parse: one that is not JSON (Parse error, as the SDK's own server
 * gives it, with 200), and JSON refused for a `__proto__` or `constructor.prototype` key (Invalid Request).
 */
export const JSON_RPC_BAD_JSON = {
  unparsable: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } },
  forbiddenKey: {
    jsonrpc: '2.0',
    id: null,
    error: { code: -32600, message: 'Invalid Request: the body holds a __proto__ or constructor.prototype key, refused for safety' },
  },
};

/**
 * Serves A2A for every component with the SDK's JSON-RPC transport and its HTTP+JSON wire format, over
 * the runs request handler. The routes authenticate first; this writes the protocol's answers.
 */
@Injectable()
export class A2AEndpoint {
  private readonly handlers = new Map<string, RunsRequestHandler>();

  constructor(
    private readonly env: Env,
    private readonly authenticator: Authenticator,
    private readonly runs: RunsService,
    @Inject(A2A_ERROR_RENDERER) private readonly errors: ErrorRenderer,
  ) {}

  /**
   * Why a schedule's fire could not use this JSON-RPC call, or null. A fire sends no A2A-Version header, so it
   * is served as v0.3 (whose method names hold a slash: `message/send`), and it reads one answer, not a stream.
   */
  static unfitForFires(body: unknown): string | null {
    const method = isRequestObject(body) && typeof body.method === 'string' ? body.method : '';
    if (!method.includes('/')) {
      return "A schedule's fire speaks A2A v0.3 (it sends no A2A-Version header): name the method as v0.3 does (message/send, tasks/get, tasks/cancel), or schedule the component's run route";
    }
    if (STREAMING_METHODS.has(method)) {
      return "A schedule's fire reads one answer, not a stream: use message/send";
    }
    const invalid = invalidRequest(body as Record<string, unknown>, true);
    return invalid === null ? null : `A schedule's fire sends its body as one JSON-RPC request: ${invalid}`;
  }

  /** The scope action a JSON-RPC request needs: `read` for a reading method, `run` for anything else. */
  static actionOf(body: unknown): 'run' | 'read' {
    const method = isRequestObject(body) ? body.method : undefined;
    return typeof method === 'string' && READ_METHODS.has(method) ? 'read' : 'run';
  }

  /**
   * The card as JSON (404 for an unknown component, as REST answers): v0.3's shape for a request without
   * `A2A-Version` or naming 0.3 (what a v0.3 client sends), else the v1.0 card, also for a version not served:
   * its interfaces say which versions are (JSON-RPC refuses the others, VersionNotSupported).
   */
  async card(kind: ComponentKind, resource: string, id: string, versionHeader: string | undefined): Promise<unknown> {
    const card = this.handler(kind, resource, id).card;
    return isVersion03(requestedVersion(versionHeader)) ? legacyAgentCard(card) : AgentCard.toJSON(card);
  }

  /** Throws the REST 404 for a component that does not exist; otherwise its (cached) handler is ready. */
  assertComponent(kind: ComponentKind, resource: string, id: string): void {
    this.handler(kind, resource, id);
  }

  /**
   * JSON-RPC in either protocol version: v1.0 (`SendMessage`, `GetTask`, ... with `A2A-Version: 1.0`) through
   * the SDK's transport, v0.3 (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, no version
   * header) through the SDK's compatibility layer, both over the same runs request handler.
   */
  async jsonRpc(call: A2ACall, body: unknown, response: ServerResponse): Promise<void> {
    const handler = this.handler(call.kind, call.resource, call.id);
    const context = callContext(call);
    const v03 = isVersion03(context.requestedVersion);
    const transport = v03 ? new LegacyJsonRpcTransportHandler(handler) : new JsonRpcTransportHandler(handler);
    const mapError = v03 ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;
    if (!isRequestObject(body)) {
      // The SDK answers exactly what it is handed, so it is handed only what the scope was decided from.
      writeJson(response, 200, JSON_RPC_INVALID_REQUEST);
      return;
    }
    const id = validId(body.id) ?? null;
    const errorAnswer = (error: { code: number; message: string }) => ({ jsonrpc: '2.0', id, error });
    // A schedule's body may lack an id: schedules stored before callers were held to one fire it so, and read the
    // answer: it is answered as a request with a null id, as it always was.
    const fire = call.principal.scheduleId !== undefined;
    const invalid = invalidRequest(body, fire);
    if (invalid !== null) {
      writeJson(response, 200, errorAnswer({ code: A2A_ERROR_CODE.INVALID_REQUEST, message: `Invalid Request: ${invalid}` }));
      return;
    }
    const method = body.method as string;
    try {
      if (!v03) {
        validateVersion(context.requestedVersion, handler.card, 'JSONRPC');
      }
      if (!(v03 ? METHODS.v03 : METHODS.v10).has(method)) {
        // The SDK checks params before the method: an unknown method without params would be Invalid params.
        writeJson(response, 200, errorAnswer({ code: A2A_ERROR_CODE.METHOD_NOT_FOUND, message: `Method not found: ${method}` }));
        return;
      }
      if (SEND_METHODS.has(method)) {
        assertMessageTypes(body.params);
      }
      if (v03 && method.startsWith('tasks/pushNotificationConfig/')) {
        // Never supported; answered here, as the compatibility layer reads these params before checking them.
        throw new PushNotificationNotSupportedError();
      }
    } catch (error) {
      writeJson(response, 200, errorAnswer(mapError(error)));
      return;
    }
    const request = 'id' in body ? body : { ...body, id: null };
    const result = await transport.handle(v03 ? blockingByDefault(request) : request, context);
    if (!isAsyncIterable(result)) {
      writeJson(response, 200, result);
      return;
    }
    const rpcError = (error: unknown) => errorAnswer(mapError(error));
    await writeStream(
      response,
      result,
      (error) => formatSSEErrorEvent(rpcError(error)),
      (error) => writeJson(response, 200, rpcError(error)),
    );
  }

  /** HTTP+JSON `POST .../message:send` and `.../message:stream`. */
  async restSend(call: A2ACall, body: unknown, stream: boolean, response: ServerResponse): Promise<void> {
    await this.rest(call, response, async (handler, context) => {
      assertMessageTypes(body);
      const params = SendMessageRequest.fromJSON(body ?? {});
      if (!stream) {
        return SendMessageResponse.toJSON({ payload: { $case: 'task', value: await handler.sendMessage(params, context) } });
      }
      const events = handler.sendMessageStream(params, context);
      await writeStream(
        response,
        mapAsync(events, (event) => StreamResponse.toJSON(event)),
        (error) => formatSSEErrorEvent(restErrorBody(error, restStatus(error))),
        (error) => writeRestError(response, error),
      );
      return undefined;
    });
  }

  /** HTTP+JSON `GET .../tasks/{id}`. */
  async restGetTask(call: A2ACall, taskId: string, historyLength: string | undefined, response: ServerResponse): Promise<void> {
    await this.rest(call, response, async (handler, context) =>
      Task.toJSON(await handler.getTask({ id: taskId, tenant: '', historyLength: count(historyLength) }, context)),
    );
  }

  /**
   * An HTTP+JSON method this service does not offer (SubscribeToTask, ListTasks, the extended card, push
   * notification configs): the handler's refusal, the protocol error JSON-RPC answers too, not a bare 404.
   */
  async restRefuse(call: A2ACall, method: RefusedMethod, response: ServerResponse): Promise<void> {
    await this.rest(call, response, async (handler) => {
      const answer = handler[method]();
      // SubscribeToTask is a stream whose first step is the refusal; nothing is ever streamed.
      await (Symbol.asyncIterator in answer ? answer.next() : answer);
      return undefined;
    });
  }

  /** HTTP+JSON `POST .../tasks/{id}:cancel`. */
  async restCancelTask(call: A2ACall, taskId: string, response: ServerResponse): Promise<void> {
    await this.rest(call, response, async (handler, context) =>
      Task.toJSON(await handler.cancelTask({ id: taskId, tenant: '', metadata: {} }, context)),
    );
  }

  private async rest(
    call: A2ACall,
    response: ServerResponse,
    answer: (handler: RunsRequestHandler, context: ServerCallContext) => Promise<unknown>,
  ): Promise<void> {
    const handler = this.handler(call.kind, call.resource, call.id);
    try {
      const context = callContext(call);
      validateVersion(context.requestedVersion, handler.card, 'HTTP+JSON');
      const body = await answer(handler, context);
      if (body !== undefined) {
        writeJson(response, 200, body, A2A_CONTENT_TYPE);
      }
    } catch (error) {
      // The handler turns every failure of its own into an A2A error: anything else is a body the binding's types refused.
      writeRestError(response, error instanceof A2AError ? error : new RequestMalformedError('The body is not a valid A2A request'));
    }
  }

  private handler(kind: ComponentKind, resource: string, id: string): RunsRequestHandler {
    const key = `${kind}/${id}`;
    let handler = this.handlers.get(key);
    if (!handler) {
      const component = this.runs.getComponent(kind, id);
      const card = agentCard(component, {
        baseUrl: this.env.publicUrl,
        resource,
        provider: this.env.OS_NAME,
        version: SERVICE_VERSION,
        credentialRequired: this.authenticator.mode !== 'none',
      });
      handler = new RunsRequestHandler(this.runs, { kind, id, card, tasks: kind !== 'workflow' }, this.errors);
      this.handlers.set(key, handler);
    }
    return handler;
  }
}

function callContext(call: A2ACall): ServerCallContext {
  const header = (name: string) => {
    const value = call.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(',') : value;
  };
  return defaultServerCallContextBuilder({
    extensions: Extensions.parseServiceParameter(header(HTTP_EXTENSION_HEADER)),
    user: new PrincipalUser(call.principal),
    headers: call.headers,
    requestedVersion: requestedVersion(header(A2A_VERSION_HEADER)),
  });
}

/**
 * A v0.3 `message/send` waits for its task unless it says `blocking: false`. The SDK's compatibility layer reads an
 * absent `blocking` as blocking without a `configuration` but as non-blocking inside one, so `{historyLength: 0}`
 * alone turned a send into a background run.
 */
function blockingByDefault(body: Record<string, unknown>): Record<string, unknown> {
  const params = body.params as { configuration?: unknown } | undefined;
  const configuration = params?.configuration;
  if (body.method !== 'message/send' || typeof configuration !== 'object' || configuration === null || 'blocking' in configuration) {
    return body;
  }
  return { ...body, params: { ...params, configuration: { ...configuration, blocking: true } } };
}

/** A version as the protocol negotiates it, Major.Minor: `1.0.0` is 1.0, as `0.3.0` is 0.3. */
function majorMinor(version: string | undefined): string | undefined {
  return version?.trim().replace(/^(\d+\.\d+)\.\d+$/, '$1');
}

/** The version an `A2A-Version` header asks for: without one (or empty), 0.3, as the SDK takes it too. */
function requestedVersion(header: string | undefined): string {
  return majorMinor(header) || '0.3';
}

/** `historyLength` of the query string, as the SDK's own HTTP+JSON transport reads it. */
function count(value: string | undefined): number | undefined {
  if (value === undefined || value === '') {
    return undefined;
  }
  if (!/^\d+$/.test(value)) {
    throw new RequestMalformedError('historyLength must be a non-negative integer');
  }
  return Number(value);
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';
}

async function* mapAsync<T, U>(source: AsyncIterable<T>, map: (value: T) => U): AsyncGenerator<U> {
  for await (const value of source) {
    yield map(value);
  }
}

function writeJson(response: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  response.writeHead(status, { 'content-type': `${contentType}; charset=utf-8` });
  response.end(JSON.stringify(body));
}

function writeRestError(response: ServerResponse, error: unknown): void {
  const status = restStatus(error);
  writeJson(response, status, restErrorBody(error, status), A2A_CONTENT_TYPE);
}

/** The SDK's HTTP status for an error, and 503 for ours that says to try again (the SDK has no such error). */
function restStatus(error: unknown): number {
  return error instanceof UnavailableError ? 503 : restStatusFor(error);
}

/** The SDK's HTTP+JSON error body, with the status name of a 503 (UNAVAILABLE), which the SDK does not know. */
function restErrorBody(error: unknown, status: number): ReturnType<typeof toRestErrorBody> {
  const body = toRestErrorBody(error, status);
  return status === 503 ? { error: { ...body.error, status: 'UNAVAILABLE' } } : body;
}

/**
 * Server-sent events, as the SDK's own transports write them. The response starts with the first event,
 * so an error before it (a malformed message, an unknown session) is an ordinary error answer.
 */
async function writeStream(
  response: ServerResponse,
  events: AsyncIterable<unknown>,
  errorEvent: (error: unknown) => string,
  errorBeforeStart: (error: unknown) => void,
): Promise<void> {
  const iterator = events[Symbol.asyncIterator]();
  let next: IteratorResult<unknown>;
  try {
    next = await iterator.next();
  } catch (error) {
    errorBeforeStart(error);
    return;
  }
  response.writeHead(200, SSE_HEADERS);
  const stopKeepalive = keepStreamAlive((chunk) => response.write(chunk));
  try {
    while (!next.done) {
      response.write(formatSSEEvent(next.value));
      next = await iterator.next();
    }
  } catch (error) {
    response.write(errorEvent(error));
  } finally {
    stopKeepalive();
  }
  response.end();
}

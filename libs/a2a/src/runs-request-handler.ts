import { EventEmitter, on } from 'node:events';

import {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  Message,
  SendMessageRequest,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  A2AError,
  ContentTypeNotSupportedError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import { A2ARequestHandler, ServerCallContext, User } from '@a2a-js/sdk/server';

import { Principal } from '@app/access';
import { ErrorRenderer } from '@app/errors';
import { ComponentKind, RunDto, RunErrorCode, RunEvent, RunException, RunRequest, RunsService, SESSION_ID } from '@app/runs';
import { UNSTORABLE, unstorable } from '@app/validation';

import { contentArtifact, messageText, startedTask, submittedTask, taskStatus, toTask } from './run-task';

/** The A2A view of an authenticated caller: the transports hand it to the request handler in the call context. */
export class PrincipalUser implements User {
  constructor(readonly principal: Principal) {}

  get isAuthenticated(): boolean {
    return this.principal.kind !== 'anonymous';
  }

  get userName(): string {
    return this.principal.userId ?? '';
  }
}

export interface A2AComponent {
  kind: ComponentKind;
  id: string;
  card: AgentCard;
  /** Workflows answer message/send and message/stream only. */
  tasks: boolean;
}

/**
 * The SDK's request handler interface, implemented over the run domain rather than the SDK's in-process
 * task store: a task is a run (task id = run id, context id = session id), so A2A runs are attributed,
 * self-scoped, listed, queued and cancelled like any other, on any api replica and in the worker.
 */
export class RunsRequestHandler implements A2ARequestHandler {
  constructor(
    private readonly runs: RunsService,
    private readonly component: A2AComponent,
    private readonly errors: ErrorRenderer,
  ) {}

  get card(): AgentCard {
    return this.component.card;
  }

  async getAgentCard(): Promise<AgentCard> {
    return this.component.card;
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    // The protocol's answer when the card says `capabilities.extendedAgentCard: false`, as it does here.
    return Promise.reject(new UnsupportedOperationError('This agent has no extended card: its public card is the whole card'));
  }

  /**
   * Waits for the finished run, or with `returnImmediately` queues it as a background run and answers the submitted
   * task. A workflow always waits: it has no GetTask, so a submitted workflow task could never be followed.
   */
  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Task> {
    const caller = principalOf(context);
    const request = runRequest(params);
    const historyLength = validHistoryLength(params.configuration?.historyLength);
    await this.refuseContinuation(params.message, caller);
    const { kind, id } = this.component;
    const task = await this.translated('SendMessage', async () => {
      if (params.configuration?.returnImmediately && this.component.tasks) {
        return submittedTask(await this.runs.enqueue(caller, kind, id, request), inputOf(request), this.component);
      }
      return toTask(await this.runs.run(caller, kind, id, request), request.messageId);
    });
    return withHistory(task, historyLength);
  }

  /** The run's events as A2A updates: the task (working), its content as one artifact in pieces, then the final status. */
  async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const caller = principalOf(context);
    const request = runRequest(params);
    await this.refuseContinuation(params.message, caller);
    const events = new EventEmitter();
    const finished = this.runs
      .stream(caller, this.component.kind, this.component.id, request, (event) => events.emit('event', event))
      .then(
        () => events.emit('end'),
        // Only while the stream is read: an 'error' nobody listens for would throw here instead.
        (error: unknown) => events.listenerCount('error') > 0 && events.emit('error', this.toA2AError(error, 'SendStreamingMessage')),
      );
    const task = { taskId: '', contextId: '', input: inputOf(request), streamed: false };
    try {
      for await (const [event] of on(events, 'event', { close: ['end'] }) as AsyncIterableIterator<[RunEvent]>) {
        yield* streamResponses(event, task);
      }
    } finally {
      await finished;
    }
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    this.requireTasks();
    // As the HTTP+JSON binding refuses them (its query string is checked before this): invalid params, not "not found".
    if (typeof params.id !== 'string' || params.id === '') {
      throw new RequestMalformedError('id (the task id) is required');
    }
    const historyLength = validHistoryLength(params.historyLength);
    const task = await this.translated('GetTask', async () => {
      const run = await this.runs.get(principalOf(context), this.component.kind, this.component.id, params.id);
      return toTask(run, await this.runs.messageIdOf(run));
    });
    return withHistory(task, historyLength);
  }

  /** Records the cancellation: a queued task is canceled at once, a working one at its run's next checkpoint. */
  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    this.requireTasks();
    const { kind, id } = this.component;
    // Read first: a queued task this call cancels answers as canceled, one that had ended (canceled included) cannot be.
    const before = await this.translated('CancelTask', () => this.runs.get(principalOf(context), kind, id, params.id));
    if (before.status === 'completed' || before.status === 'failed' || before.status === 'cancelled') {
      throw new TaskNotCancelableError(`Task ${before.run_id} already ${before.status}`);
    }
    return this.translated('CancelTask', async () => {
      const run = await this.runs.cancel(principalOf(context), kind, id, params.id);
      return toTask(run, await this.runs.messageIdOf(run));
    });
  }

  listTasks(): Promise<never> {
    return Promise.reject(new UnsupportedOperationError('List the runs of a session with GET /sessions/{session_id}/runs'));
  }

  resubscribe(): AsyncGenerator<StreamResponse, void, undefined> {
    const refusal = this.component.tasks
      ? new UnsupportedOperationError('Poll tasks/get, or follow the run with the WebSocket watch action')
      : this.noTasks();
    return (async function* refuse(): AsyncGenerator<StreamResponse, void, undefined> {
      yield* [];
      throw refusal;
    })();
  }

  createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  listTaskPushNotificationConfigs(): Promise<never> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  deleteTaskPushNotificationConfig(): Promise<void> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  /**
   * A message naming a task continues it, which a run cannot be: tasks here finish in one turn. A task this
   * caller cannot see (unknown, another's, another component's) is TaskNotFound, as tasks/get answers it.
   */
  private async refuseContinuation(message: Message | undefined, caller: Principal): Promise<void> {
    if (!message?.taskId) {
      return;
    }
    const { kind, id } = this.component;
    await this.translated('SendMessage', () => this.runs.get(caller, kind, id, message.taskId));
    throw new UnsupportedOperationError('Tasks here finish in one turn: send a new message with the same contextId to continue');
  }

  private requireTasks(): void {
    if (!this.component.tasks) {
      throw this.noTasks();
    }
  }

  /** A workflow's task cannot be read back, so no task method is offered for it. */
  private noTasks(): UnsupportedOperationError {
    return new UnsupportedOperationError(`A ${this.component.kind} answers message/send and message/stream only`);
  }

  private async translated<T>(method: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.toA2AError(error, method);
    }
  }

  /** Our errors as the protocol's: an unknown run is TaskNotFound; anything else keeps the REST wording (and a 500's error_id). */
  private toA2AError(error: unknown, method: string): A2AError {
    if (error instanceof A2AError) {
      return error;
    }
    if (error instanceof RunException && error.code === RunErrorCode.RunNotFound) {
      return new TaskNotFoundError(error.detail);
    }
    const { status, detail } = this.errors.render(error, `A2A ${method} ${this.component.kind} ${this.component.id}`);
    if (status >= 500) {
      return status === 503 ? new UnavailableError(detail) : new A2AError(detail);
    }
    return new RequestMalformedError(detail);
  }
}

/**
 * A refusal that passes (the database away), with the REST wording: JSON-RPC's internal error (the protocol has
 * no "unavailable"), and over HTTP+JSON a 503 UNAVAILABLE (see the endpoint's restStatus), so that a client tries
 * again. UnsupportedOperation (a 400) had told it never to.
 */
export class UnavailableError extends A2AError {}

function principalOf(context: ServerCallContext): Principal {
  if (!(context.user instanceof PrincipalUser)) {
    // The transports always authenticate first; a context without our user is a wiring mistake.
    throw new A2AError('Unauthenticated A2A call');
  }
  return context.user.principal;
}

const MESSAGE_ID_MAX_LENGTH = 255;

/** An A2A message as a run request: its text is the run's message, its context id the session to continue. */
function runRequest(params: SendMessageRequest): RunRequest {
  const message: Message | undefined = params.message;
  if (!message?.messageId) {
    throw new RequestMalformedError('message.messageId is required');
  }
  // Kept with the run, so that its task's history names the message as the client did.
  if (message.messageId.length > MESSAGE_ID_MAX_LENGTH || unstorable(message.messageId)) {
    throw new RequestMalformedError(
      `message.messageId must be at most ${MESSAGE_ID_MAX_LENGTH} characters, without NUL or unpaired surrogates`,
    );
  }
  if (!message.parts?.length) {
    throw new RequestMalformedError('message needs a text part');
  }
  if (message.parts.some((part) => part.content?.$case !== 'text')) {
    // Files and data have no run to go to: a run's input is text. Refused, not dropped beside a text part.
    throw new ContentTypeNotSupportedError('Only text parts are accepted (the card says text/plain): a run takes a text message');
  }
  const text = messageText(message);
  if (text === '') {
    throw new RequestMalformedError('message needs a text part with text in it');
  }
  const refused = unstorable(text);
  if (refused) {
    throw new RequestMalformedError(`message text must not contain ${UNSTORABLE[refused]}`);
  }
  if (message.contextId && !SESSION_ID.test(message.contextId)) {
    throw new RequestMalformedError('contextId must be 1-128 letters, digits, ., _, : or -');
  }
  return { message: text, session_id: message.contextId || undefined, messageId: message.messageId };
}

/** The client's message as its task's history shows it: the run's input, under the client's id. */
function inputOf(request: RunRequest): { text: string; messageId: string } {
  return { text: request.message, messageId: request.messageId ?? '' };
}

/** A `historyLength` as given (absent: the whole history), or RequestMalformed. */
function validHistoryLength(historyLength: unknown): number | undefined {
  if (historyLength !== undefined && (typeof historyLength !== 'number' || !Number.isInteger(historyLength) || historyLength < 0)) {
    throw new RequestMalformedError('historyLength must be a non-negative integer');
  }
  return historyLength;
}

/** The task with at most its last `historyLength` messages (all when absent). */
function withHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength !== undefined) {
    task.history = historyLength > 0 ? task.history.slice(-historyLength) : [];
  }
  return task;
}

/** What a stream knows of its task: ids from RunStarted (content events carry the run id only), and whether content has streamed. */
interface StreamedTask {
  taskId: string;
  contextId: string;
  input: { text: string; messageId: string };
  streamed: boolean;
}

function* streamResponses(event: RunEvent, task: StreamedTask): Generator<StreamResponse> {
  const ids = () => ({ taskId: task.taskId, contextId: task.contextId });
  switch (event.event) {
    case 'RunStarted':
      Object.assign(task, { taskId: String(event.data.run_id), contextId: String(event.data.session_id) });
      yield { payload: { $case: 'task', value: startedTask(event, task.input) } };
      return;
    case 'RunContent': {
      const artifact = contentArtifact(task.taskId, String(event.data.content));
      yield { payload: { $case: 'artifactUpdate', value: { ...ids(), artifact, append: task.streamed, lastChunk: false, metadata: {} } } };
      task.streamed = true;
      return;
    }
    default: {
      const run = event.data as unknown as RunDto;
      if (typeof run.content === 'string') {
        // The whole content, or after streamed pieces an empty last one that closes the artifact.
        const artifact = contentArtifact(task.taskId, task.streamed ? '' : run.content);
        yield { payload: { $case: 'artifactUpdate', value: { ...ids(), artifact, append: task.streamed, lastChunk: true, metadata: {} } } };
      }
      yield { payload: { $case: 'statusUpdate', value: { ...ids(), status: taskStatus(run), metadata: {} } } };
    }
  }
}

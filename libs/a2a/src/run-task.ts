import { Artifact, Message, Part, Role, Task, TaskState, TaskStatus } from '@a2a-js/sdk';

import { AcceptedRunDto, RunDto, RunEvent } from '@app/runs';

const STATES: Record<string, TaskState> = {
  queued: TaskState.TASK_STATE_SUBMITTED,
  paused: TaskState.TASK_STATE_SUBMITTED,
  running: TaskState.TASK_STATE_WORKING,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  cancelled: TaskState.TASK_STATE_CANCELED,
};

export function taskState(status: string): TaskState {
  return STATES[status] ?? TaskState.TASK_STATE_UNSPECIFIED;
}

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: {} };
}

/** The text of a message's text parts: a run's input is one string. */
export function messageText(message: Message): string {
  return message.parts.flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : [])).join('\n');
}

/** One message of a task; its id is the client's for the message it sent (`messageId`), else one of the task's. */
function message(run: Pick<RunDto, 'run_id' | 'session_id'>, role: Role, suffix: string, text: string, messageId?: string | null): Message {
  return {
    messageId: messageId || `${run.run_id}-${suffix}`,
    contextId: run.session_id,
    taskId: run.run_id,
    role,
    parts: [textPart(text)],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A run's content is one artifact, streamed in pieces and complete once the run is. */
export function contentArtifact(runId: string, text: string): Artifact {
  return {
    artifactId: `${runId}-content`,
    name: 'content',
    description: 'The run content',
    parts: [textPart(text)],
    metadata: {},
    extensions: [],
  };
}

/** A run's state as an A2A status; a failed or cancelled run carries its error as the agent's message. */
export function taskStatus(run: RunDto): TaskStatus {
  const reason = run.status === 'failed' || run.status === 'cancelled' ? run.error : null;
  return {
    state: taskState(run.status),
    message: reason ? message(run, Role.ROLE_AGENT, 'error', reason) : undefined,
    timestamp: new Date(run.updated_at * 1000).toISOString(),
  };
}

/**
 * A run as an A2A task: task id = run id, context id = session id; the input (under the id the client gave it, when
 * it gave one) and the content form its history.
 */
export function toTask(run: RunDto, messageId: string | null | undefined): Task {
  const history = [message(run, Role.ROLE_USER, 'message', run.message, messageId)];
  if (run.content !== null) {
    history.push(message(run, Role.ROLE_AGENT, 'content', run.content));
  }
  return {
    id: run.run_id,
    contextId: run.session_id,
    status: taskStatus(run),
    artifacts: run.content !== null ? [contentArtifact(run.run_id, run.content)] : [],
    history,
    metadata: { component_type: run.component_type, component_id: run.component_id, background: run.background },
  };
}

/** A background run just queued: submitted, with the input as its history (as committed, whatever a worker has done since). */
export function submittedTask(
  accepted: AcceptedRunDto,
  input: { text: string; messageId: string },
  component: { kind: string; id: string },
): Task {
  return {
    id: accepted.run_id,
    contextId: accepted.session_id,
    status: { state: taskState(accepted.status), message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [message(accepted, Role.ROLE_USER, 'message', input.text, input.messageId)],
    metadata: { component_type: component.kind, component_id: component.id, background: true },
  };
}

/** A RunStarted event's task: working, with the input as its history. */
export function startedTask(event: RunEvent, input: { text: string; messageId: string }): Task {
  const run = { run_id: String(event.data.run_id), session_id: String(event.data.session_id) };
  return {
    id: run.run_id,
    contextId: run.session_id,
    status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [message(run, Role.ROLE_USER, 'message', input.text, input.messageId)],
    metadata: { component_type: event.data.component_type, component_id: event.data.component_id, background: false },
  };
}

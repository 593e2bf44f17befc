import { isUUID } from 'class-validator';

import { COMPONENT_KINDS, ComponentKind, SESSION_ID } from '@app/runs';
import { UNSTORABLE, unstorable } from '@app/validation';

/**
 * What a client may send on /ws: authenticate first unless the upgrade carried a credential, then run, watch or
 * cancel. An action may carry a `request_id` of the client's choosing: every frame answering it carries it back,
 * so a client with several actions in flight on one socket can tell their answers apart.
 */
export type ClientFrame =
  | { action: 'authenticate'; token: string }
  | ({ action: 'run'; component_type: ComponentKind; component_id: string; message: string; session_id?: string } & Tagged)
  | ({ action: 'watch'; run_id: string } & Tagged)
  | ({ action: 'cancel'; run_id: string } & Tagged);

interface Tagged {
  request_id?: string;
}

export const REQUEST_ID_MAX_LENGTH = 128;

/** A frame that is not one of the above: answered with an error frame of this status (and its request_id), the socket stays open. */
export class FrameRejected extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly requestId?: string,
  ) {
    super(detail);
  }
}

/** A Map, not an object: a frame's `constructor` or `__proto__` must not find an Object property. */
const KIND_NAMES = new Map<string, ComponentKind>(COMPONENT_KINDS.flatMap((kind) => [[kind, kind] as const, [`${kind}s`, kind] as const]));

function text(frame: Record<string, unknown>, field: string, optional = false): string | undefined {
  const value = frame[field];
  if (value === undefined && optional) {
    return undefined;
  }
  if (typeof value !== 'string' || value === '') {
    throw new FrameRejected(422, `'${field}' must be a non-empty string`);
  }
  return storable(field, value);
}

function storable(field: string, value: string): string {
  const refused = unstorable(value);
  if (refused) {
    throw new FrameRejected(422, `'${field}' must not contain ${UNSTORABLE[refused]}`);
  }
  return value;
}

/** Run ids are UUIDs; anything else is refused before a lookup (and never quoted back at length). */
function runId(frame: Record<string, unknown>): string {
  const value = text(frame, 'run_id')!;
  if (!isUUID(value, 'all')) {
    throw new FrameRejected(422, 'run_id must be a UUID');
  }
  return value;
}

export function parseFrame(data: string): ClientFrame {
  let frame: unknown;
  try {
    frame = JSON.parse(data);
  } catch {
    throw new FrameRejected(400, 'A frame is a JSON object with an "action"');
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
    throw new FrameRejected(400, 'A frame is a JSON object with an "action"');
  }
  const fields = frame as Record<string, unknown>;
  const requestId = text(fields, 'request_id', true);
  if (requestId !== undefined && requestId.length > REQUEST_ID_MAX_LENGTH) {
    throw new FrameRejected(422, `'request_id' must be at most ${REQUEST_ID_MAX_LENGTH} characters`);
  }
  try {
    const parsed = actionOf(fields);
    return parsed.action === 'authenticate' || requestId === undefined ? parsed : { ...parsed, request_id: requestId };
  } catch (error) {
    throw error instanceof FrameRejected ? new FrameRejected(error.status, error.detail, requestId) : error;
  }
}

function actionOf(fields: Record<string, unknown>): ClientFrame {
  switch (fields.action) {
    case 'authenticate':
      return { action: 'authenticate', token: text(fields, 'token')! };
    case 'run': {
      const kind = KIND_NAMES.get(String(fields.component_type));
      if (!kind) {
        throw new FrameRejected(422, "'component_type' must be agent, team or workflow");
      }
      const sessionId = text(fields, 'session_id', true);
      if (sessionId !== undefined && !SESSION_ID.test(sessionId)) {
        throw new FrameRejected(422, "'session_id' must be 1-128 letters, digits, ., _, : or -");
      }
      if (typeof fields.message !== 'string') {
        throw new FrameRejected(422, "'message' must be a string");
      }
      const message = storable('message', fields.message);
      return { action: 'run', component_type: kind, component_id: text(fields, 'component_id')!, message, session_id: sessionId };
    }
    case 'watch':
    case 'cancel':
      return { action: fields.action, run_id: runId(fields) };
    default:
      throw new FrameRejected(400, "'action' must be authenticate, run, watch or cancel");
  }
}

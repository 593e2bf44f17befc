import { AUTH_TIMEOUT_MS, MAX_BUFFERED_BYTES } from './run-socket';

/** /ws in the OpenAPI document: the upgrade and the frames, which OpenAPI itself cannot describe. */
export const WEBSOCKET_PATH_ITEM = {
  get: {
    operationId: 'websocketUpgrade',
    tags: ['websocket'],
    summary: 'Upgrade to a WebSocket that runs, watches and cancels runs',
    description: [
      `Authenticate with the upgrade's Authorization header, or send {"action": "authenticate", "token": "..."} within ${AUTH_TIMEOUT_MS / 1000} s;`,
      'a bad token answers {"event": "auth_error", "detail"} and closes the socket (1008).',
      'Actions: {"action": "run", "component_type", "component_id", "message", "session_id"?} streams the same events as stream=true',
      '({"event": "RunStarted" | "RunContent" | "RunCompleted" | "RunError" | "RunCancelled", "data"});',
      '{"action": "watch", "run_id"} follows a run until its final event; {"action": "cancel", "run_id"} answers {"event": "CancelRequested", "data": run}.',
      'An action may carry a "request_id" (a string of up to 128 characters): every frame answering it, errors included, carries it back.',
      'Each action needs the scope of its REST route (<resource>:run); a refusal is {"event": "error", "status": 403, "detail"} and the socket stays open.',
      `The server pings every 30 s; a client that lets more than ${MAX_BUFFERED_BYTES / 1024 / 1024} MiB of frames pile up unread is disconnected (1013).`,
    ].join(' '),
    security: [{}, { bearer: [] }],
    'x-required-scope': 'per action: the scope of its REST route',
    parameters: [
      { name: 'Upgrade', in: 'header', required: true, schema: { type: 'string', enum: ['websocket'] } },
      { name: 'Connection', in: 'header', required: true, schema: { type: 'string', example: 'Upgrade' } },
      {
        name: 'Sec-WebSocket-Key',
        in: 'header',
        required: true,
        schema: { type: 'string' },
        description: 'RFC 6455: 16 random bytes, base64',
      },
      { name: 'Sec-WebSocket-Version', in: 'header', required: true, schema: { type: 'string', enum: ['13'] } },
    ],
    responses: {
      '101': { description: 'Switching Protocols: the socket is open (a credential is judged after it, in frames)' },
      '400': { description: 'Not a valid WebSocket handshake' },
      '403': {
        description: 'Origin not allowed: a browser page of another origin',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBodyDto' } } },
      },
      '426': {
        description: 'A plain GET: upgrade to a WebSocket',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBodyDto' } } },
      },
    },
  },
};

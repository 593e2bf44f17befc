/** Span names and the attributes the trace summary is built from (OpenTelemetry naming, so collectors show them as is). */
export const SPAN = {
  request: 'run.request',
  queueWait: 'run.queue_wait',
  component: 'run.component',
  modelCall: 'model.call',
} as const;

export const RUN_ATTRIBUTES = {
  runId: 'run.id',
  sessionId: 'session.id',
  userId: 'user.id',
  componentType: 'component.type',
  componentId: 'component.id',
  status: 'run.status',
} as const;

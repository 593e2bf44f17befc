/** Span names and the attributes spans name their run with (OpenTelemetry naming, so collectors show them as is). */
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

/** The columns of a run that its request span's attributes say. */
export interface TracedRun {
  id: string;
  sessionId: string;
  userId: string | null;
  componentType: string;
  componentId: string;
  background: boolean;
  /** Where known: the run's status as stored. */
  status?: string;
}

/**
 * What a run's request span says of it: the run, and its status at the request's end. A background run's request
 * ends once it is queued; a run the api executes ends with the request, so its span says how it ended (running
 * while it runs). The run's row says all of it, so the stored request span leaves it out (see RequestSpan).
 */
export function requestAttributes(run: TracedRun): Record<string, string> {
  return {
    [RUN_ATTRIBUTES.runId]: run.id,
    [RUN_ATTRIBUTES.sessionId]: run.sessionId,
    ...(run.userId === null ? {} : { [RUN_ATTRIBUTES.userId]: run.userId }),
    [RUN_ATTRIBUTES.componentType]: run.componentType,
    [RUN_ATTRIBUTES.componentId]: run.componentId,
    [RUN_ATTRIBUTES.status]: run.background ? 'queued' : (run.status ?? 'running'),
  };
}

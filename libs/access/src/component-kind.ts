/**
 * The kinds of component the service runs. Every context that names one (runs, queue jobs, schedules' targets,
 * memories, traces) reads them here, the lowest of its libraries.
 */
export const COMPONENT_KINDS = ['agent', 'team', 'workflow'] as const;
export type ComponentKind = (typeof COMPONENT_KINDS)[number];

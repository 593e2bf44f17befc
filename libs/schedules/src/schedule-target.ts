import { COMPONENT_KINDS } from '@app/access';

import { routedPath } from './schedule-endpoint';

/** `target_type` values: the component kinds a run endpoint can start. */
export const TARGET_TYPES = COMPONENT_KINDS;
export type TargetType = (typeof TARGET_TYPES)[number];

export interface ScheduleTarget {
  type: TargetType;
  id: string;
}

const RUN_ENDPOINT = /^\/(agents|teams|workflows)\/([A-Za-z0-9][A-Za-z0-9_.-]{0,127})\/runs$/;

/**
 * `target_type`/`target_id` are derived, never sent: a POST to `/{agents|teams|workflows}/{id}/runs`, as the
 * router reads the path (`/./agents/%65cho-agent/runs` is echo-agent's), targets that component; any other
 * call targets nothing (both null).
 */
export function targetOf(method: string, endpoint: string): ScheduleTarget | null {
  const match = method === 'POST' ? RUN_ENDPOINT.exec(routedPath(endpoint) ?? '') : null;
  return match ? { type: match[1].slice(0, -1) as TargetType, id: match[2] } : null;
}

/** Where a run started through `target` can be read back. */
export function runPath(target: ScheduleTarget, runId: string): string {
  return `/${target.type}s/${encodeURIComponent(target.id)}/runs/${encodeURIComponent(runId)}`;
}

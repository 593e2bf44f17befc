/**
 * The scope language: `<resource>:<action>` or `<resource>:<id>:<action>`
 * (`*` as id means every component), plus the admin scope.
 */
export const ADMIN_SCOPE = 'platform:admin';
export const RESOURCES = [
  'agents',
  'teams',
  'workflows',
  'sessions',
  'memories',
  'knowledge',
  'traces',
  'config',
  'schedules',
  'service_accounts',
] as const;
export const ACTIONS = ['read', 'run', 'write', 'delete'] as const;
/** The scope language in a sentence, for a refusal that needs it. */
export const SCOPE_SYNTAX = `A scope is <resource>:<action> or <resource>:<id>:<action>, or ${ADMIN_SCOPE}; resources: ${RESOURCES.join(', ')}; actions: ${ACTIONS.join(', ')}.`;
export const DEFAULT_SCOPES = ['agents:run', 'teams:run', 'workflows:run', 'sessions:read', 'config:read'];

export type Resource = (typeof RESOURCES)[number];
export type Action = (typeof ACTIONS)[number];

export interface ParsedScope {
  resource: Resource;
  id: string | null;
  action: Action;
}

const ID_PATTERN = /^(\*|[A-Za-z0-9][A-Za-z0-9_.-]{0,127})$/;

export function parseScope(scope: string): ParsedScope | null {
  const parts = scope.split(':');
  if (parts.length < 2 || parts.length > 3) {
    return null;
  }
  const resource = parts[0] as Resource;
  const action = parts[parts.length - 1] as Action;
  const id = parts.length === 3 ? parts[1] : null;
  if (!RESOURCES.includes(resource) || !ACTIONS.includes(action) || (id !== null && !ID_PATTERN.test(id))) {
    return null;
  }
  return { resource, id: id === '*' ? null : id, action };
}

export function isValidScope(scope: string): boolean {
  return scope === ADMIN_SCOPE || parseScope(scope) !== null;
}

/** Privileged scopes must be granted deliberately (`allow_privileged_scopes: true`). */
export function isPrivilegedScope(scope: string): boolean {
  if (scope === ADMIN_SCOPE) {
    return true;
  }
  const parsed = parseScope(scope);
  return parsed !== null && (parsed.action === 'write' || parsed.action === 'delete' || parsed.resource === 'service_accounts');
}

/** Does one held scope grant the required one? `agents:run` covers `agents:x:run`; `agents:x:run` covers only itself. */
function grants(held: string, required: ParsedScope): boolean {
  const parsed = parseScope(held);
  return (
    parsed !== null &&
    parsed.resource === required.resource &&
    parsed.action === required.action &&
    (parsed.id === null || parsed.id === required.id)
  );
}

/** True when `held` includes the admin scope or a grant for `required`. */
export function covers(held: readonly string[], required: string): boolean {
  if (held.includes(ADMIN_SCOPE)) {
    return true;
  }
  const parsed = parseScope(required);
  return parsed !== null && held.some((scope) => grants(scope, parsed));
}

/** The scopes any one of which grants `required`, broadest first (`agents:run`, `agents:echo-agent:run`). */
export function grantsOf(required: string): string[] {
  const parsed = parseScope(required);
  return parsed?.id ? [`${parsed.resource}:${parsed.action}`, required] : [required];
}

/** What a refusal for lack of `required` says: `Insufficient permissions. Required scope(s): agents:run or agents:x:run`. */
export function missingScopeDetail(required: string): string {
  return `Insufficient permissions. Required scope(s): ${grantsOf(required).join(' or ')}`;
}

/** Is `held` a grant of `scope`'s resource and action for one component (`agents:echo-agent:run` for `agents:run`)? */
export function isComponentGrantOf(held: string, scope: string): boolean {
  const grant = parseScope(held);
  const wide = parseScope(scope);
  return grant !== null && wide !== null && grant.id !== null && grant.resource === wide.resource && grant.action === wide.action;
}

/** The narrower of two scopes when one covers the other; null when they grant nothing in common. */
function meet(a: string, b: string): string | null {
  if (covers([a], b)) {
    return b;
  }
  return covers([b], a) ? a : null;
}

/**
 * What both scope lists grant: a scope is in the result only if each list covers it.
 * `['agents:run']` with `['agents:echo-agent:run', 'config:read']` gives `['agents:echo-agent:run']`.
 */
export function intersectScopes(a: readonly string[], b: readonly string[]): string[] {
  const both = a.flatMap((held) => b.map((other) => meet(held, other)).filter((scope): scope is string => scope !== null));
  return [...new Set(both)];
}

/**
 * Narrows a route's scope to one component: (`agents:run`, `echo-agent`) gives `agents:echo-agent:run`. An id
 * no scope can name (`echo-agent:run`, a blank, 200 KB of text) is no component's either: the route's own scope
 * decides, and the route then answers 404, rather than a 403 asking for a scope that cannot exist.
 */
export function forComponent(scope: string, componentId: string): string {
  const parsed = parseScope(scope);
  return parsed && componentId !== '*' && ID_PATTERN.test(componentId) ? `${parsed.resource}:${componentId}:${parsed.action}` : scope;
}

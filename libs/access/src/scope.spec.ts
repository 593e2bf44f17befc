import { describe, expect, it } from 'vitest';

import { mayUseSome, Principal } from './principal';
import { covers, forComponent, intersectScopes, isComponentGrantOf, isPrivilegedScope, isValidScope, parseScope } from './scope';

describe('scope language', () => {
  it('parses two- and three-part scopes of the catalogue', () => {
    expect(parseScope('agents:run')).toEqual({ resource: 'agents', id: null, action: 'run' });
    expect(parseScope('agents:echo-agent:run')).toEqual({ resource: 'agents', id: 'echo-agent', action: 'run' });
    expect(parseScope('agents:*:run')).toEqual({ resource: 'agents', id: null, action: 'run' });
  });

  it.each(['agents', 'agents:fly', 'robots:run', 'a:b:c:d', '', 'agents::run', 'agents:bad id:run'])('rejects %j', (scope) => {
    expect(isValidScope(scope)).toBe(false);
  });

  it('accepts the admin scope', () => {
    expect(isValidScope('platform:admin')).toBe(true);
  });

  it.each([
    ['sessions:write', true],
    ['agents:x:delete', true],
    ['platform:admin', true],
    ['service_accounts:read', true],
    ['agents:run', false],
    ['config:read', false],
  ])('privileged(%s) = %s', (scope, privileged) => {
    expect(isPrivilegedScope(scope)).toBe(privileged);
  });

  it('lets a resource-wide grant cover one component, never the reverse', () => {
    expect(covers(['agents:run'], 'agents:echo-agent:run')).toBe(true);
    expect(covers(['agents:*:run'], 'agents:echo-agent:run')).toBe(true);
    expect(covers(['agents:echo-agent:run'], 'agents:echo-agent:run')).toBe(true);
    expect(covers(['agents:echo-agent:run'], 'agents:other:run')).toBe(false);
    expect(covers(['agents:echo-agent:run'], 'agents:run')).toBe(false);
    expect(covers(['agents:read'], 'agents:run')).toBe(false);
    expect(covers(['sessions:write'], 'sessions:read')).toBe(false);
  });

  it('lets the admin scope cover everything', () => {
    expect(covers(['platform:admin'], 'service_accounts:write')).toBe(true);
  });

  it('narrows a route scope to a component', () => {
    expect(forComponent('agents:run', 'echo-agent')).toBe('agents:echo-agent:run');
    // An id no scope can name is no component's: the route's own scope decides (and the route answers 404).
    for (const id of ['echo-agent:run', '../echo-agent', 'echo-agent ', '*', 'x'.repeat(129)]) {
      expect(forComponent('agents:run', id)).toBe('agents:run');
    }
  });

  it('intersects two grants down to what both allow', () => {
    expect(intersectScopes(['agents:run', 'config:read'], ['agents:echo-agent:run', 'sessions:read'])).toEqual(['agents:echo-agent:run']);
    expect(intersectScopes(['platform:admin'], ['config:read'])).toEqual(['config:read']);
    expect(intersectScopes(['config:read'], ['platform:admin'])).toEqual(['config:read']);
    expect(intersectScopes(['agents:a:run'], ['agents:b:run'])).toEqual([]);
    expect(intersectScopes(['schedules:write'], [])).toEqual([]);
  });

  it('tells a per-component grant of a route scope', () => {
    expect(isComponentGrantOf('agents:echo-agent:run', 'agents:run')).toBe(true);
    expect(isComponentGrantOf('agents:run', 'agents:run')).toBe(false);
    expect(isComponentGrantOf('agents:*:run', 'agents:run')).toBe(false);
    expect(isComponentGrantOf('agents:echo-agent:read', 'agents:run')).toBe(false);
    expect(isComponentGrantOf('teams:echo-agent:run', 'agents:run')).toBe(false);
  });

  it('lets a route that narrows per component be used with any one component grant', () => {
    const token = (scopes: string[]): Principal => ({
      kind: 'service_account',
      userId: 'sa:x',
      scopes,
      scopesEnforced: true,
      selfScoped: true,
    });
    expect(mayUseSome(token(['agents:echo-agent:run']), 'agents:run', true)).toBe(true);
    expect(mayUseSome(token(['agents:echo-agent:run']), 'agents:run', false)).toBe(false);
    expect(mayUseSome(token(['agents:run']), 'agents:run', false)).toBe(true);
    expect(mayUseSome(token(['config:read']), 'agents:run', true)).toBe(false);
    expect(mayUseSome(token(['config:read']), 'platform:admin', false)).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';

import { isAllowedOrigin, listensOnLoopbackOnly } from './loopback';

describe('isAllowedOrigin', () => {
  const publicUrl = 'https://svc.example.com';

  it.each([
    [undefined, true],
    ['https://svc.example.com', true],
    ['http://localhost:6274', true],
    ['http://127.0.0.1:3000', true],
    ['http://[::1]:8080', true],
    ['http://127.0.0.2:3000', true],
    ['http://LOCALHOST:6274', true],
    ['https://attacker.example', false],
    ['http://svc.example.com', false],
    ['https://svc.example.com.attacker.example', false],
    ['null', false],
    ['not a url', false],
    ['http://127.attacker.example', false],
    ['http://localhost.attacker.example', false],
    ['http://app.localhost', false],
  ])('Origin %s: allowed %s', (origin, allowed) => {
    expect(isAllowedOrigin(origin, publicUrl)).toBe(allowed);
  });
});

describe('listensOnLoopbackOnly', () => {
  it('is true for a loopback address or name, false for every interface or another address', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) {
      expect(listensOnLoopbackOnly(host), host).toBe(true);
    }
    for (const host of ['0.0.0.0', '::', '[::]', '10.0.0.5', 'platform.example']) {
      expect(listensOnLoopbackOnly(host), host).toBe(false);
    }
  });
});

import { describe, expect, it } from 'vitest';

import { isAllowedOrigin } from './loopback';

describe('isAllowedOrigin', () => {
  const publicUrl = 'https://svc.example.com';

  it.each([
    undefined,
    'https://svc.example.com',
    'http://localhost:6274',
    'http://127.0.0.1:3000',
    'http://[::1]:8080',
    'http://127.0.0.2:3000',
    'http://LOCALHOST:6274',
  ])('allows %s', (origin) => {
    expect(isAllowedOrigin(origin, publicUrl)).toBe(true);
  });

  it.each([
    'https://attacker.example',
    'http://svc.example.com',
    'https://svc.example.com.attacker.example',
    'null',
    'not a url',
    'http://127.attacker.example',
    'http://localhost.attacker.example',
    'http://app.localhost',
  ])('refuses %s', (origin) => {
    expect(isAllowedOrigin(origin, publicUrl)).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';

import { loadEnv } from '@app/config';

import { hostRule } from './http-surface';

describe('hostRule', () => {
  it('checks no Host in an auth mode', () => {
    expect(hostRule(loadEnv({}), 'security_key')).toBeNull();
    expect(hostRule(loadEnv({}), 'jwt')).toBeNull();
  });

  it('on an open instance allows loopback on any port and PUBLIC_URL host:port, normalised', () => {
    const allowed = hostRule(loadEnv({ PUBLIC_URL: 'https://Platform.Example.test/' }), 'none')!;
    for (const host of [
      'localhost',
      'LOCALHOST:1',
      'localhost.:7777',
      '127.0.0.1',
      '127.9.9.9:80',
      '0x7f.1:7777',
      '[::1]',
      '[::1]:7777',
      'platform.example.test',
      'platform.example.test:443',
      'PLATFORM.example.test',
    ]) {
      expect(allowed(host), host).toBe(true);
    }
    for (const host of [
      undefined,
      '',
      'evil.example',
      'platform.example.test:80',
      'platform.example.test.evil.example',
      '127.0.0.1.evil.example',
      'evil.localhost',
      'user@localhost',
      'localhost/x',
      'localhost?x',
      '10.0.0.1',
      '[::2]',
    ]) {
      expect(allowed(host), String(host)).toBe(false);
    }
  });

  it('defaults PUBLIC_URL to http://HOST:PORT', () => {
    const allowed = hostRule(loadEnv({ HOST: '192.0.2.10', PORT: '8080' }), 'none')!;
    expect(allowed('192.0.2.10:8080')).toBe(true);
    expect(allowed('192.0.2.10')).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';

import { isAllowedOrigin } from './mcp-http';

describe('isAllowedOrigin', () => {
  const publicUrl = 'https://svc.example.com';

  it.each([undefined, 'https://svc.example.com', 'http://localhost:6274', 'http://127.0.0.1:3000', 'http://[::1]:8080'])('allows %s', (origin) => {
    expect(isAllowedOrigin(origin, publicUrl)).toBe(true);
  });

  it.each(['https://attacker.example', 'http://svc.example.com', 'https://svc.example.com.attacker.example', 'null', 'not a url'])('refuses %s', (origin) => {
    expect(isAllowedOrigin(origin, publicUrl)).toBe(false);
  });
});

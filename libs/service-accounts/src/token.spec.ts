import { createHash } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { base62, generateToken, hashToken, looksLikeToken } from './token';

describe('service-account tokens', () => {
  it('are svc_pat_ plus base62 of 32 random bytes, with a 15-character display prefix', () => {
    const token = generateToken();
    expect(token.plaintext).toMatch(/^svc_pat_[0-9A-Za-z]{40,43}$/);
    expect(token.prefix).toBe(token.plaintext.slice(0, 15));
    expect(token.hash).toBe(createHash('sha256').update(token.plaintext).digest('hex'));
    expect(looksLikeToken(token.plaintext)).toBe(true);
  });

  it('never repeat', () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => generateToken().plaintext));
    expect(tokens.size).toBe(1000);
  });

  it('encode base62 as a big integer without padding', () => {
    expect(base62(Buffer.from([0]))).toBe('0');
    expect(base62(Buffer.from([61]))).toBe('z');
    expect(base62(Buffer.from([62]))).toBe('10');
    expect(base62(Buffer.alloc(32, 0xff))).toHaveLength(43);
  });

  it('hash as lowercase hex SHA-256', () => {
    expect(hashToken('svc_pat_x')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('reject lookalikes before any database lookup', () => {
    expect(looksLikeToken('svc_pat_short')).toBe(false);
    expect(looksLikeToken(`svc_pat_${'a'.repeat(43)}!`)).toBe(false);
  });
});

import { createHash, randomBytes } from 'node:crypto';

export const TOKEN_PREFIX = 'svc_pat_';
/** The literal prefix plus 7 random characters: enough to tell tokens apart, useless to an attacker. */
export const TOKEN_DISPLAY_LENGTH = TOKEN_PREFIX.length + 7;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const TOKEN_PATTERN = /^svc_pat_[0-9A-Za-z]{20,64}$/;

export function base62(bytes: Buffer): string {
  let value = BigInt(`0x${bytes.toString('hex') || '0'}`);
  let out = '';
  while (value > 0n) {
    out = BASE62[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out || '0';
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function looksLikeToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

export interface MintedToken {
  plaintext: string;
  hash: string;
  prefix: string;
}

/** `svc_pat_` + base62 of 32 random bytes; only the SHA-256 hash is ever stored. */
export function generateToken(): MintedToken {
  const plaintext = `${TOKEN_PREFIX}${base62(randomBytes(32))}`;
  return { plaintext, hash: hashToken(plaintext), prefix: plaintext.slice(0, TOKEN_DISPLAY_LENGTH) };
}

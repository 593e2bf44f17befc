import { scrypt } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: string, keylen: number) => Promise<Buffer>;

const SALT = 'platform-service/schedule-owner-key';
const fingerprints = new Map<string, Promise<string>>();

/**
 * Which security key wrote a schedule the key owns, as stored with it: a fire of that schedule acts as root,
 * so once the key is rotated (how an operator revokes it) the schedule must stop acting. scrypt, not a plain
 * hash, so the stored value is no fast way to test guesses at a short key. Computed once per key.
 */
export function securityKeyFingerprint(key: string): Promise<string> {
  let fingerprint = fingerprints.get(key);
  if (!fingerprint) {
    fingerprint = scryptAsync(key, SALT, 32).then((derived) => derived.toString('base64url'));
    fingerprints.set(key, fingerprint);
  }
  return fingerprint;
}

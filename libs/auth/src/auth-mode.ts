import { Env } from '@app/config';

export type AuthMode = 'none' | 'security_key' | 'jwt';

/** JWT wins when a key is set (the security key, if also set, stays a root credential). */
export function authMode(env: Env): AuthMode {
  if (env.jwtConfigured) {
    return 'jwt';
  }
  return env.OS_SECURITY_KEY ? 'security_key' : 'none';
}

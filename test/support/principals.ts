import { SignJWT } from 'jose';

import { call } from './http';

export const ROOT_KEY = 'test-os-security-key-0001';
export const JWT_SECRET = 'test-jwt-secret-0123456789abcdef0123456789';

export interface MintedAccount {
  id: string;
  name: string;
  token: string;
  token_prefix: string;
  scopes: string[];
  [field: string]: unknown;
}

let counter = 0;

/** A unique, valid account name for this test run. */
export function uniqueName(prefix = 'sa'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}

/** Mints a service account through the real api; fails the test unless it answers 201. */
export async function mintAccount(
  baseUrl: string,
  credential: string,
  options: { name?: string; scopes?: string[]; privileged?: boolean; [field: string]: unknown } = {},
): Promise<MintedAccount> {
  const { name = uniqueName(), scopes, privileged, ...rest } = options;
  const response = await call<MintedAccount>(baseUrl, 'POST', '/service-accounts', {
    token: credential,
    json: {
      name,
      ...(scopes ? { scopes: scopes.map((scope) => ({ scope, effect: 'allow' })) } : {}),
      ...(privileged ? { allow_privileged_scopes: true } : {}),
      ...rest,
    },
  });
  if (response.status !== 201) {
    throw new Error(`mint ${name} answered ${response.status}: ${response.text}`);
  }
  return response.body;
}

/** An HS256 JWT signed with JWT_SECRET (what an identity provider would issue). */
export function signJwt(
  claims: { sub: string; scopes?: string[]; [claim: string]: unknown },
  secret = JWT_SECRET,
  expiresIn = '5m',
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(secret));
}

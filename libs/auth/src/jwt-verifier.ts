import { createPublicKey, KeyObject } from 'node:crypto';

import { Injectable } from '@nestjs/common';
import { createRemoteJWKSet, errors, JWTPayload, JWTVerifyGetKey, jwtVerify } from 'jose';

import { Env } from '@app/config';

export interface JwtIdentity {
  sub: string;
  scopes: string[];
}

export class JwtRejected extends Error {}

/** Accepts `scopes` as a list or a space-separated string, and the OAuth `scope` claim. */
function scopesOf(payload: JWTPayload): string[] {
  const claim = payload.scopes ?? payload.scope;
  if (Array.isArray(claim)) {
    return claim.filter((scope): scope is string => typeof scope === 'string');
  }
  return typeof claim === 'string' ? claim.split(/\s+/).filter(Boolean) : [];
}

@Injectable()
export class JwtVerifier {
  private readonly key: Uint8Array | KeyObject | JWTVerifyGetKey | null;

  constructor(private readonly env: Env) {
    if (env.JWT_SECRET) {
      this.key = new TextEncoder().encode(env.JWT_SECRET);
    } else if (env.JWT_PUBLIC_KEY) {
      this.key = createPublicKey(env.JWT_PUBLIC_KEY);
    } else if (env.JWT_JWKS_URL) {
      this.key = createRemoteJWKSet(new URL(env.JWT_JWKS_URL));
    } else {
      this.key = null;
    }
  }

  get configured(): boolean {
    return this.key !== null;
  }

  async verify(token: string): Promise<JwtIdentity> {
    if (!this.key) {
      throw new JwtRejected('JWT verification is not configured');
    }
    try {
      const { payload } = await jwtVerify(token, this.key as Uint8Array, {
        issuer: this.env.JWT_ISSUER,
        audience: this.env.JWT_AUDIENCE,
        clockTolerance: 10,
      });
      if (typeof payload.sub !== 'string' || payload.sub === '') {
        throw new JwtRejected('Invalid token: missing sub claim');
      }
      return { sub: payload.sub, scopes: scopesOf(payload) };
    } catch (error) {
      if (error instanceof JwtRejected) {
        throw error;
      }
      if (error instanceof errors.JWTExpired) {
        throw new JwtRejected('Token has expired');
      }
      throw new JwtRejected(`Invalid token: ${error instanceof errors.JOSEError ? error.code : 'malformed'}`);
    }
  }
}

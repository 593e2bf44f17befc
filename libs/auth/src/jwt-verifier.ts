import { createPublicKey, KeyObject } from 'node:crypto';

import { Injectable, Logger } from '@nestjs/common';
import { createRemoteJWKSet, errors, JWTPayload, jwtVerify, JWTVerifyGetKey } from 'jose';

import { Env, warnIfShort } from '@app/config';

export interface JwtIdentity {
  sub: string;
  scopes: string[];
}

export class JwtRejected extends Error {}

type VerificationKey = Uint8Array | KeyObject | JWTVerifyGetKey;

interface ExpectedClaims {
  issuer?: string;
  audience?: string;
}

/** Longest `sub` a token may carry: every user id column holds 255 characters. */
const MAX_SUBJECT = 255;

/**
 * A claim that ends up in the database as a user id or a scope: no control characters and no half of a
 * surrogate pair (PostgreSQL refuses NUL and such halves: a 500 on the caller's first write, not a 401).
 */
function isPlainText(value: string): boolean {
  return value.isWellFormed() && !/\p{Cc}/u.test(value);
}

/** Accepts `scopes` as a list or a space-separated string, and the OAuth `scope` claim. */
function scopesOf(payload: JWTPayload): string[] {
  const claim = payload.scopes ?? payload.scope;
  if (Array.isArray(claim)) {
    return claim.filter((scope): scope is string => typeof scope === 'string');
  }
  return typeof claim === 'string' ? claim.split(/\s+/).filter(Boolean) : [];
}

/** Signature, expiry, issuer and audience checks; the key and the expected claims come from the subclass. */
abstract class SignedTokenVerifier {
  protected constructor(
    private readonly key: VerificationKey | null,
    private readonly expected: ExpectedClaims,
  ) {}

  get configured(): boolean {
    return this.key !== null;
  }

  async verify(token: string): Promise<JwtIdentity> {
    if (!this.key) {
      throw new JwtRejected('JWT verification is not configured');
    }
    try {
      // A token without an expiry would be good forever once leaked: `exp` is required.
      const { payload } = await jwtVerify(token, this.key as Uint8Array, { ...this.expected, clockTolerance: 10, requiredClaims: ['exp'] });
      if (typeof payload.sub !== 'string' || payload.sub === '') {
        throw new JwtRejected('Invalid token: missing sub claim');
      }
      if (payload.sub.length > MAX_SUBJECT || !isPlainText(payload.sub)) {
        throw new JwtRejected(`Invalid token: sub must be at most ${MAX_SUBJECT} characters, without control characters`);
      }
      const scopes = scopesOf(payload);
      if (!scopes.every(isPlainText)) {
        throw new JwtRejected('Invalid token: a scope holds control characters');
      }
      return { sub: payload.sub, scopes };
    } catch (error) {
      if (error instanceof JwtRejected) {
        throw error;
      }
      if (error instanceof errors.JWTExpired) {
        throw new JwtRejected('Token has expired');
      }
      if (error instanceof errors.JWTClaimValidationFailed && error.claim === 'exp' && error.reason === 'missing') {
        throw new JwtRejected('Token has no exp claim: tokens without an expiry are refused');
      }
      throw new JwtRejected(`Invalid token: ${error instanceof errors.JOSEError ? error.code : 'malformed'}`);
    }
  }
}

function restKey(env: Env): VerificationKey | null {
  if (env.JWT_SECRET) {
    return new TextEncoder().encode(env.JWT_SECRET);
  }
  if (env.JWT_PUBLIC_KEY) {
    return createPublicKey(env.JWT_PUBLIC_KEY);
  }
  return env.JWT_JWKS_URL ? createRemoteJWKSet(new URL(env.JWT_JWKS_URL)) : null;
}

/** The JWTs of the REST plane (JWT_*). */
@Injectable()
export class JwtVerifier extends SignedTokenVerifier {
  constructor(env: Env) {
    super(restKey(env), { issuer: env.JWT_ISSUER, audience: env.JWT_AUDIENCE });
    warnIfShort('JWT_SECRET', env.JWT_SECRET, 32, 'HS256 wants a secret of at least 256 bits, or a token can be forged by guessing it');
    if (env.JWT_JWKS_URL && !env.JWT_AUDIENCE) {
      new Logger(JwtVerifier.name).warn(
        "JWT_JWKS_URL is set without JWT_AUDIENCE: any token its key set signs is accepted here, including tokens issued for other services. Set JWT_AUDIENCE to this service's audience.",
      );
    }
  }
}

/**
 * Access tokens of the external authorization server that /mcp trusts (MCP_OAUTH_*). The audience
 * defaults to the /mcp resource URL, so a token minted for another API is not accepted here.
 */
@Injectable()
export class McpOAuthVerifier extends SignedTokenVerifier {
  constructor(env: Env) {
    super(env.mcpOAuthConfigured ? createRemoteJWKSet(new URL(env.MCP_OAUTH_JWKS_URL!)) : null, {
      issuer: env.MCP_OAUTH_ISSUER,
      audience: env.MCP_OAUTH_AUDIENCE ?? env.mcpResourceUrl,
    });
  }
}

import { createServer, Server } from 'node:http';

import { exportJWK, generateKeyPair, JWK, SignJWT } from 'jose';

/**
 * A minimal external OAuth authorization server: RFC 8414 metadata and a JWKS over real HTTP, and
 * access tokens signed with its key (what a real identity provider would hand an MCP client).
 */
export class AuthorizationServer {
  private server: Server | null = null;
  private privateKey!: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  private jwk!: JWK;
  issuer = '';

  async start(): Promise<this> {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    this.privateKey = privateKey;
    this.jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
    this.server = createServer((request, response) => {
      const documents: Record<string, unknown> = {
        '/jwks': { keys: [this.jwk] },
        '/.well-known/oauth-authorization-server': {
          issuer: this.issuer,
          authorization_endpoint: `${this.issuer}/authorize`,
          token_endpoint: `${this.issuer}/token`,
          jwks_uri: this.jwksUrl,
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256'],
        },
      };
      const document = documents[request.url ?? ''];
      response.writeHead(document ? 200 : 404, { 'content-type': 'application/json' });
      response.end(JSON.stringify(document ?? { error: 'not_found' }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  get jwksUrl(): string {
    return `${this.issuer}/jwks`;
  }

  /** An access token for `audience`; `scope` is the OAuth space-separated claim. */
  accessToken(claims: { sub: string; audience: string; scope?: string; issuer?: string; expiresIn?: string }): Promise<string> {
    return new SignJWT(claims.scope === undefined ? {} : { scope: claims.scope })
      .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
      .setSubject(claims.sub)
      .setIssuer(claims.issuer ?? this.issuer)
      .setAudience(claims.audience)
      .setIssuedAt()
      .setExpirationTime(claims.expiresIn ?? '5m')
      .sign(this.privateKey);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';

import { afterEach, describe, expect, it } from 'vitest';

import { namesResourceMetadata, verifyMcp } from './mcp-verify';

describe('namesResourceMetadata', () => {
  it.each([
    ['Bearer resource_metadata="https://svc.example/.well-known/oauth-protected-resource/mcp"', true],
    ['Bearer realm="mcp", resource_metadata="https://svc.example/.well-known/oauth-protected-resource"', true],
    ['bearer error="invalid_token", RESOURCE_METADATA=https://svc.example/prm', true],
    ['Basic realm="x", Bearer resource_metadata="https://svc.example/prm"', true],
  ])('%s names an OAuth-protected resource', (header, expected) => {
    expect(namesResourceMetadata(header)).toBe(expected);
  });

  it.each([
    [null],
    [''],
    ['Bearer'],
    ['Bearer realm="platform"'],
    ['Bearer error="invalid_token", error_description="no resource_metadata=here"'],
    ['Basic realm="x", resource_metadata="https://svc.example/prm"'],
    ['Basic abc==, Bearer realm="x"'],
  ])('%s does not', (header) => {
    expect(namesResourceMetadata(header)).toBe(false);
  });
});

describe('verifyMcp oauth_challenge', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  async function refusing(challenge: string): Promise<string> {
    server = createServer((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': challenge });
      response.end(JSON.stringify({ detail: 'Missing credential' }));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  }

  it('is false for a token-protected service: a 401 with a plain Bearer challenge is no pending sign-in', async () => {
    const verify = await verifyMcp(await refusing('Bearer realm="platform"'), 'svc_pat_wrong');
    expect(verify).toMatchObject({ ok: false, status_code: 401, oauth_challenge: false });
  });

  it('is true when the challenge names resource_metadata (RFC 9728)', async () => {
    const url = await refusing('Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"');
    expect((await verifyMcp(url, null)).oauth_challenge).toBe(true);
  });
});

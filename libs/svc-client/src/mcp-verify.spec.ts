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

describe('verifyMcp error', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it("is the service's words for a refused POST: its status and detail", async () => {
    server = createServer((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="platform"' });
      response.end(JSON.stringify({ detail: 'Invalid or expired service account token' }));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const verify = await verifyMcp(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, 'svc_pat_gone');
    expect(verify.error).toBe('HTTP 401: Invalid or expired service account token');
  });

  it('is not the 405 a stateless server answers the optional SSE GET with, when tools/list then breaks off', async () => {
    server = createServer((request, response) => {
      if (request.method === 'GET') {
        response.writeHead(405, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'stateless' }));
        return;
      }
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        const message = JSON.parse(body) as { id?: number; method: string };
        if (message.method === 'initialize') {
          const result = { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'stub', version: '1' } };
          response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
        } else if (message.method === 'tools/list') {
          // After the GET was refused: the connection drops mid-answer.
          setTimeout(() => request.socket.destroy(), 200);
        } else {
          response.writeHead(202).end();
        }
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const verify = await verifyMcp(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, null);
    expect(verify.ok).toBe(false);
    expect(verify.error).not.toMatch(/405/);
  });
});

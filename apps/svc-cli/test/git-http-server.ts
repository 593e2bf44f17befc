import { spawn } from 'node:child_process';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';

export interface GitHttpServer {
  /** Base URL on loopback; a repository `<root>/x.git` is at `<url>/x.git`. */
  url: string;
  /** The Authorization headers requests carried, in order. */
  authorizations: string[];
  close(): Promise<void>;
}

/**
 * Serves the bare repositories under `root` over smart HTTP (`git http-backend` as a CGI program behind
 * a node server), answering 401 to any request without Basic auth for `user:password`, as a git host does.
 */
export async function gitHttpServer(root: string, user: string, password: string): Promise<GitHttpServer> {
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const authorizations: string[] = [];
  const server: Server = createServer((request, response) => {
    authorizations.push(request.headers.authorization ?? '');
    if (request.headers.authorization !== expected) {
      response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end();
      return;
    }
    const [path, query = ''] = (request.url ?? '/').split('?');
    const backend = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH ?? '',
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: request.method ?? 'GET',
        PATH_INFO: decodeURIComponent(path),
        QUERY_STRING: query,
        CONTENT_TYPE: request.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: request.headers['content-encoding'] ?? '',
        GIT_PROTOCOL: String(request.headers['git-protocol'] ?? ''),
        REMOTE_USER: user,
        REMOTE_ADDR: '127.0.0.1',
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    request.pipe(backend.stdin);
    const chunks: Buffer[] = [];
    backend.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    backend.on('close', () => {
      // CGI output: header lines, a blank line, the body.
      const output = Buffer.concat(chunks);
      const end = output.indexOf('\r\n\r\n');
      const headerText = output.subarray(0, end).toString();
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of headerText.split('\r\n')) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') {
          status = Number.parseInt(value, 10);
        } else {
          headers[name] = value;
        }
      }
      response.writeHead(status, headers).end(output.subarray(end + 4));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authorizations,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

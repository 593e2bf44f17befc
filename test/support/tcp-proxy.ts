import { createServer, Server, Socket } from 'node:net';
import { networkInterfaces } from 'node:os';

import { testPort } from './ports';

/**
 * A TCP proxy a test can cut, to make a real dependency unreachable mid-run. It listens on loopback
 * unless told otherwise (a non-loopback address makes a local service look remote), and keeps every
 * byte clients sent so a test can assert what went over the wire.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private sent = '';
  private stalled = false;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Everything clients sent through the proxy so far. */
  received(): string {
    return this.sent;
  }

  /**
   * Listens on `port` (one of testPort's when not given: no other process is handed it while the proxy
   * is cut), so a cut proxy can come back on the same address; on loopback unless another `host` is given.
   */
  async listen(port?: number, host = '127.0.0.1'): Promise<number> {
    port ??= await testPort();
    const server = createServer((client) => {
      client.on('data', (chunk: Buffer) => (this.sent += chunk.toString('latin1')));
      if (this.stalled) {
        this.track(client);
        return;
      }
      const upstream = new Socket();
      upstream.connect(this.targetPort, this.targetHost);
      this.track(client);
      this.track(upstream);
      client.pipe(upstream).pipe(client);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject).listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return (server.address() as { port: number }).port;
  }

  /**
   * While stalled, connections are accepted but nothing is forwarded or answered: a dependency
   * that hangs. Open connections are dropped either way, so no pooled keep-alive socket crosses
   * from one mode to the other.
   */
  stall(stalled: boolean): void {
    this.stalled = stalled;
    for (const socket of this.sockets) {
      socket.destroy();
    }
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  /** Drops every open connection and refuses new ones. */
  async cut(): Promise<void> {
    for (const socket of this.sockets) {
      socket.destroy();
    }
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
  }
}

/** An address of this machine that is not loopback: a service reached through it counts as remote. */
export function remoteAddress(): string {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((item) => item?.family === 'IPv4' && !item.internal)?.address;
  if (!address) {
    throw new Error('this machine has no non-loopback IPv4 address to make a local service look remote');
  }
  return address;
}

/** A proxy to `targetUrl` on a non-loopback address, and the URL it answers on. */
export async function remoteProxy(targetUrl: string): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(targetUrl);
  const proxy = new TcpProxy(target.hostname, Number(target.port));
  const host = remoteAddress();
  return { proxy, url: `http://${host}:${await proxy.listen(undefined, host)}` };
}

import { createServer, Server, Socket } from 'node:net';

/** A loopback TCP proxy a test can cut, to make a real dependency unreachable mid-run. */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private stalled = false;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Listens on `port` (a free one when 0), so a cut proxy can come back on the same address. */
  async listen(port = 0): Promise<number> {
    this.server = createServer((client) => {
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
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
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

import WebSocket from 'ws';

export interface Frame {
  event: string;
  data?: Record<string, any>;
  status?: number;
  detail?: string;
  /** The action's request_id, on frames answering an action that carried one. */
  request_id?: string;
}

/** A real WebSocket client on /ws that keeps every frame it receives, and waits for the ones a test expects. */
export class SocketClient {
  readonly frames: Frame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.frames.push(JSON.parse(data.toString()) as Frame);
      this.waiters.splice(0).forEach((wake) => wake());
    });
    this.closed = new Promise((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** Opens `${baseUrl}/ws`, with the token in the upgrade's Authorization header when given. */
  static async open(baseUrl: string, token?: string): Promise<SocketClient> {
    const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/ws`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const client = new SocketClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return client;
  }

  send(frame: Record<string, unknown>): void {
    this.socket.send(JSON.stringify(frame));
  }

  /** The first frame (from `from` on) that matches, waiting for it up to `timeoutMs`. */
  async next(match: (frame: Frame) => boolean, timeoutMs = 15_000, from = 0): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.slice(from).find(match);
      if (found) {
        return found;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`No matching frame within ${timeoutMs} ms; received ${JSON.stringify(this.frames)}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The final event of a run (RunCompleted, RunError or RunCancelled). */
  final(runId: string, timeoutMs?: number): Promise<Frame> {
    return this.next(
      (frame) => ['RunCompleted', 'RunError', 'RunCancelled'].includes(frame.event) && frame.data?.run_id === runId,
      timeoutMs,
    );
  }

  close(): void {
    this.socket.close();
  }
}

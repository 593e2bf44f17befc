import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

import { freePort } from '../../scripts/embedded-postgres.mjs';

/** Where the ports this process hands out start: a block of its own per vitest fork, below the kernel's range. */
const BLOCK = 1500;
const FIRST = 20_000;
const forkIndex = Number(process.env.VITEST_POOL_ID ?? 0) % 8;
let next = FIRST + forkIndex * BLOCK + Math.floor(Math.random() * BLOCK);

/** The first port the kernel picks for bind(0) and outgoing connections (32768 on Linux by default). */
function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 0;
  }
}

const canListen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * A port for a server a test starts, which binds it later (another process, often). A free port the kernel
 * picked can be handed out again before that bind (to another fork's server, or as an outgoing connection's
 * local port): these come from below the kernel's range, from a block per fork, each free when picked and never
 * handed out twice by this process. Where the kernel's range leaves no room, the kernel picks.
 */
export async function testPort(): Promise<number> {
  if (ephemeralStart() < FIRST + 8 * BLOCK) {
    return freePort();
  }
  const blockStart = FIRST + forkIndex * BLOCK;
  for (let tried = 0; tried < BLOCK; tried += 1) {
    const port = blockStart + ((next - blockStart) % BLOCK);
    next = port + 1;
    if (await canListen(port)) {
      return port;
    }
  }
  return freePort();
}

import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

import { freePort } from '../../scripts/embedded-postgres.mjs';

/** A block of ports per vitest fork (the main process is fork 0), all below the kernel's range. */
const FIRST = 20_000;
const BLOCK = 1500;
const FORKS = 8;
const blockStart = FIRST + (Number(process.env.VITEST_POOL_ID ?? 0) % FORKS) * BLOCK;
/** Where this process starts in its block: random, so a fork's next test file does not begin where its last one did. */
let offset = Math.floor(Math.random() * BLOCK);

/** The first port the kernel picks for bind(0) and outgoing connections (32768 on Linux by default). */
function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 0;
  }
}

/** Whether the kernel's range leaves every fork's block below it; read once. */
const blocksFit = ephemeralStart() >= FIRST + FORKS * BLOCK;

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
  for (let tried = 0; blocksFit && tried < BLOCK; tried += 1) {
    const port = blockStart + (offset++ % BLOCK);
    if (await canListen(port)) {
      return port;
    }
  }
  return freePort();
}

import { Client, ClientConfig } from 'pg';

/**
 * TCP keepalive after 10 s idle (then probes every second, libuv's setting): a database host that vanished
 * without closing its connections (a failover, a dropped NAT entry) is noticed in about 20 s, and the pool
 * drops those clients, instead of the next query on one waiting out TCP's retransmissions (about 15 minutes).
 */
const KEEPALIVE: ClientConfig = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 };

/**
 * The pg client every pool and dedicated connection here uses. When the database dies, a client
 * can emit 'error' twice: the server's "terminating connection" and then the socket's ECONNRESET.
 * The first reaches the query, the pool or the holder's own handler; the second may come after
 * they let go, and an 'error' nobody listens to ends the process. This listener outlives them all.
 */
export class ConnectionClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(typeof config === 'string' ? { ...KEEPALIVE, connectionString: config } : { ...KEEPALIVE, ...config });
    // Nothing to do here: whoever held the connection has been told, and the pool drops a broken client.
    this.on('error', () => undefined);
  }
}

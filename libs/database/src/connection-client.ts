import { Client } from 'pg';

/**
 * The pg client every pool and dedicated connection here uses. When the database dies, a client
 * can emit 'error' twice: the server's "terminating connection" and then the socket's ECONNRESET.
 * The first reaches the query, the pool or the holder's own handler; the second may come after
 * they let go, and an 'error' nobody listens to ends the process. This listener outlives them all.
 */
export class ConnectionClient extends Client {
  constructor(config?: ConstructorParameters<typeof Client>[0]) {
    super(config);
    // Nothing to do here: whoever held the connection has been told, and the pool drops a broken client.
    this.on('error', () => undefined);
  }
}

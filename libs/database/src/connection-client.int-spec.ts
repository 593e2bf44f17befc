import { readFileSync } from 'node:fs';

import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { ConnectionClient } from './connection-client';
import { dataSourceOptions } from './data-source';

/** A pg client's socket, which pg keeps on its connection. */
const localPort = (client: unknown): number => (client as { connection: { stream: { localPort: number } } }).connection.stream.localPort;

/**
 * The kernel's timer on the established TCP connection from `port`, from /proc/net/tcp's `tr` column:
 * 0 none, 1 retransmission, 2 keepalive (an idle connection with SO_KEEPALIVE set).
 */
function timerOf(port: number): number | null {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state, , timer] = line.trim().split(/\s+/);
      if (local.endsWith(`:${hexPort}`) && state === '01') {
        return Number(timer.split(':')[0]);
      }
    }
  }
  return null;
}

describe('database connections', () => {
  let url: string;
  let dataSource: DataSource;

  beforeAll(async () => {
    url = await createTestDatabase();
    dataSource = await new DataSource(dataSourceOptions(url)).initialize();
  });
  afterAll(async () => {
    await dataSource?.destroy();
  });

  it('keep TCP keepalive on, pooled and dedicated alike, so a database host that vanished is noticed', async () => {
    const runner = dataSource.createQueryRunner();
    const pooled = await runner.connect();
    const dedicated = new ConnectionClient({ connectionString: url });
    await dedicated.connect();
    try {
      expect([timerOf(localPort(pooled)), timerOf(localPort(dedicated))]).toEqual([2, 2]);
    } finally {
      await runner.release();
      await dedicated.end();
    }
  });
});

import { AddressInfo } from 'node:net';

import { describe, expect, it } from 'vitest';

import { closeProbes, listenProbes } from './probe-server';

describe('listenProbes', () => {
  it('answers a probe that throws with the generic 500 and tells the app why, so the reason reaches its log', async () => {
    const failures: [unknown, string][] = [];
    const server = await listenProbes(
      {
        '/metrics': () => Promise.reject(new Error('registry broke')),
        '/livez': async () => ({ status: 200, body: { status: 'ok' } }),
      },
      { port: 0, portVariable: 'TEST_PORT', host: '127.0.0.1' },
      (error, path) => failures.push([error, path]),
    );
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const failed = await fetch(`${base}/metrics?x=1`);
      expect(failed.status).toBe(500);
      expect(await failed.json()).toEqual({ detail: 'Internal server error', error_type: 'internal_error' });
      expect(failures).toEqual([[new Error('registry broke'), '/metrics']]);

      expect((await fetch(`${base}/livez`)).status).toBe(200);
      expect((await fetch(`${base}/nope`)).status).toBe(404);
      expect((await fetch(`${base}/livez`, { method: 'POST' })).status).toBe(405);
      expect(failures).toHaveLength(1);
    } finally {
      await closeProbes(server);
    }
  });
});

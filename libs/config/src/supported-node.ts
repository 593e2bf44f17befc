import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { ROOT_DIR, ROOT_PACKAGE } from './version';

/** `have` is `need` or later (both `major.minor.patch`). */
export function isAtLeast(have: string, need: string): boolean {
  const [a, b] = [have, need].map((version) => version.replace(/^v/, '').split('.').map(Number));
  const differs = b.findIndex((part, index) => a[index] !== part);
  return differs === -1 || a[differs] > b[differs];
}

/** The oldest Node.js the service runs on: package.json's engines. */
export const MINIMUM_NODE = /\d+\.\d+\.\d+/.exec(ROOT_PACKAGE.engines?.node ?? '')?.[0] ?? null;

/**
 * Imported first by the service's entry points (api, worker, migrate), before any dependency loads: on an older
 * Node.js one fails while loading, with a stack trace that names no version (undici, on Node.js 20), so the
 * process says what it needs and stops instead.
 */
if (MINIMUM_NODE && !isAtLeast(process.versions.node, MINIMUM_NODE)) {
  // In a checkout, the script that fetches a supported Node.js is at hand; an image has no scripts/.
  const fetcher = ROOT_DIR !== null && existsSync(join(ROOT_DIR, 'scripts', 'supported-node.mjs'));
  process.stderr.write(
    `This service needs Node.js ${MINIMUM_NODE} or later; this is Node.js ${process.versions.node}. ` +
      (fetcher
        ? '`npm start` fetches a supported one by itself; to run this entry point on it, put its directory first on PATH: ' +
          'PATH="$(node scripts/supported-node.mjs --bin-dir):$PATH" npm run <script>\n'
        : 'Run it on Node.js 22 LTS or 24 (an image built from a node:22 base has one).\n'),
  );
  process.exit(1);
}

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The root package.json's version: one source for /info, /openapi.json and `svc --version`. */
function readVersion(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'platform-service' && pkg.version) {
        return pkg.version;
      }
    }
  }
  return '0.0.0';
}

export const SERVICE_VERSION = readVersion();
/** The interface version the OpenAPI document declares (spec: Versioning). */
export const API_VERSION = '3.0.4';

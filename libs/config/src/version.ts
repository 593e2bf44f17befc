import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

interface RootPackage {
  name?: string;
  version?: string;
  engines?: { node?: string };
}

/** This checkout's (or image's) root package.json and its directory, found from here upwards; empty when none is found. */
function readRootPackage(): { dir: string | null; pkg: RootPackage } {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as RootPackage;
      if (pkg.name === 'platform-service') {
        return { dir, pkg };
      }
    }
  }
  return { dir: null, pkg: {} };
}

const root = readRootPackage();
export const ROOT_PACKAGE = root.pkg;
/** The checkout's (or image's) root directory, null when no package.json of the service is found. */
export const ROOT_DIR = root.dir;
/** The root package.json's version: one source for /info, /openapi.json and `svc --version`. */
export const SERVICE_VERSION = ROOT_PACKAGE.version ?? '0.0.0';
/** The interface version the OpenAPI document declares (spec: Versioning). */
export const API_VERSION = '3.0.4';

#!/usr/bin/env node
// In a fresh checkout (after `npm ci`, before any build) the first `npx svc` compiles the CLI, as `npm start`
// does for the service; the compiler's output goes to stderr so a --json document on stdout stays clean.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

if (!existsSync(join(__dirname, '../dist/apps/svc-cli/src/main.js'))) {
  process.stderr.write('svc: building this checkout first (tsc; once, a few seconds)\n');
  require('../scripts/build.cjs').build(['ignore', 2, 2]);
}
require('../dist/apps/svc-cli/src/main.js');

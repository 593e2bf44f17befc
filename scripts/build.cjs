// Compiles the apps (tsc, then tsc-alias for the @app/* paths) in this checkout: what `npm run build` does,
// callable from the quickstart and from bin/svc.js before their first run.
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '..');

function newestSource(dir) {
  return readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestSource(path) : entry.name.endsWith('.ts') ? statSync(path).mtimeMs : 0;
    return Math.max(newest, mtime);
  }, 0);
}

/** True when `stamp` (a built file) is missing or older than a source file under apps/ or libs/. */
function isStale(stamp) {
  const built = join(root, stamp);
  return !existsSync(built) || statSync(built).mtimeMs < Math.max(newestSource(join(root, 'apps')), newestSource(join(root, 'libs')));
}

/** Runs the build; its compiler output goes to `stdio` (stderr for a CLI whose stdout is a JSON document). */
function build(stdio = 'inherit') {
  const run = (script) => execFileSync(process.execPath, [join(root, script), '-p', 'tsconfig.build.json'], { cwd: root, stdio });
  run('node_modules/typescript/bin/tsc');
  run('node_modules/tsc-alias/dist/bin/index.js');
}

module.exports = { build, isStale };

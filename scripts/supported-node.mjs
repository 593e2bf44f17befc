// Runs a command on a Node.js this service supports (package.json's engines: NestJS 12 and its tooling
// need 22.22.3 or later). `npm start`, `npm test` and `npm run bench` go through it:
//
//   node scripts/supported-node.mjs <command> [args...]
//
// On a supported Node.js the command runs as it is. On an older one (Node.js 20 is still the default of
// many machines) it runs with Node.js FALLBACK_VERSION first on PATH: the build the npm registry ships as
// the package node-<os>-<arch>, fetched once with npm into ~/.cache/platform-service ($XDG_CACHE_HOME is
// respected). So `npm ci && npm start` on a fresh machine needs nothing installed by hand.
//
//   node scripts/supported-node.mjs --bin-dir
//
// prints the directory of the Node.js it would use, for a script to put first on its PATH.
// Plain JavaScript for the oldest Node.js it may meet: no dependency, nothing newer than Node.js 18.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { constants, homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const FALLBACK_VERSION = '22.23.3';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cacheDir = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'platform-service');

/** A Node.js cannot be had: its message is the one line the user sees. */
class UnsupportedNode extends Error {}

function say(message) {
  process.stderr.write(`[supported-node] ${message}\n`);
}

function parse(version) {
  return version.replace(/^v/, '').split('.').map(Number);
}

function isAtLeast(version, minimum) {
  const have = parse(version);
  const need = parse(minimum);
  const differs = need.findIndex((part, index) => have[index] !== part);
  return differs === -1 || have[differs] > need[differs];
}

/** The oldest Node.js package.json's engines field allows. */
function minimumVersion() {
  const engines = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node;
  return /\d+\.\d+\.\d+/.exec(engines)[0];
}

/** Fetches node-<os>-<arch>@FALLBACK_VERSION from the npm registry into `target` (its bin/node). */
function fetchNode(target) {
  const name = `node-${process.platform}-${process.arch}`;
  say(`Fetching Node.js ${FALLBACK_VERSION} from the npm registry (package ${name}, about 30 MB) into ${target}; later runs reuse it.`);
  mkdirSync(cacheDir, { recursive: true });
  // A fetch cut short (Ctrl-C during npm pack) leaves its scratch directory: gone once clearly abandoned.
  for (const entry of readdirSync(cacheDir)) {
    const path = join(cacheDir, entry);
    if (entry.startsWith('download-') && Date.now() - statSync(path).mtimeMs > 3_600_000) {
      rmSync(path, { recursive: true, force: true });
    }
  }
  const scratch = mkdtempSync(join(cacheDir, 'download-'));
  try {
    const pack = spawnSync('npm', ['pack', '--loglevel=error', `${name}@${FALLBACK_VERSION}`], {
      cwd: scratch,
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
    });
    const tarball = readdirSync(scratch).find((file) => file.endsWith('.tgz'));
    if (pack.status !== 0 || !tarball) {
      const reason = (pack.error?.message ?? pack.stderr ?? '').split('\n').find((line) => line.trim()) ?? `npm exited ${pack.status}`;
      throw new UnsupportedNode(`npm could not fetch ${name}@${FALLBACK_VERSION} (${reason.trim()})`);
    }
    const untar = spawnSync('tar', ['-xzf', tarball], { cwd: scratch, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (untar.status !== 0) {
      throw new UnsupportedNode(`tar could not unpack ${tarball} (${(untar.error?.message ?? untar.stderr).trim()})`);
    }
    try {
      renameSync(join(scratch, 'package'), target);
    } catch (error) {
      // Another start fetched it at the same time: theirs is as good.
      if (!existsSync(join(target, 'bin', 'node'))) {
        throw error;
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The directory holding the Node.js to run on: this one's when it is supported, otherwise the fetched one's. */
function supportedBinDir() {
  const minimum = minimumVersion();
  if (isAtLeast(process.versions.node, minimum)) {
    return dirname(process.execPath);
  }
  const here = `this is Node.js ${process.versions.node} (${process.execPath})`;
  if (!isAtLeast(FALLBACK_VERSION, minimum)) {
    throw new UnsupportedNode(`This service needs Node.js ${minimum} or later; ${here}. Install it, then run the command again.`);
  }
  // Per platform: a home directory may be shared by machines of several kinds.
  const target = join(cacheDir, `node-v${FALLBACK_VERSION}-${process.platform}-${process.arch}`);
  if (!existsSync(join(target, 'bin', 'node'))) {
    try {
      fetchNode(target);
    } catch (error) {
      const reason = error instanceof UnsupportedNode ? error.message : String(error);
      throw new UnsupportedNode(
        `This service needs Node.js ${minimum} or later; ${here}, and ${reason}. Install Node.js ${minimum} or later (22 LTS or 24), then run the command again.`,
      );
    }
  }
  say(`Running on Node.js ${FALLBACK_VERSION} from ${target}: ${here}, older than the ${minimum} this service needs.`);
  return join(target, 'bin');
}

/** Runs the command with `binDir` first on PATH; ends as it ends (its exit code, or its signal). */
function run(binDir, [command, ...args]) {
  const env = { ...process.env, PATH: [binDir, process.env.PATH].filter(Boolean).join(delimiter) };
  // On Windows, npm's commands (npm, vitest) are .cmd files, which only a shell runs.
  const child = spawn(command, args, { stdio: 'inherit', env, shell: process.platform === 'win32' });
  // Ctrl-C reaches the whole process group, the command included; a signal sent to this process alone is passed on.
  const forward = (signal) => child.kill(signal);
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  signals.forEach((signal) => process.on(signal, forward));
  child.on('error', (error) => {
    say(`Could not run ${command}: ${error.message}`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    signals.forEach((name) => process.off(name, forward));
    if (signal) {
      // Ends by the same signal; where that does not end this process (SIGPIPE is ignored), as a shell reports it.
      process.exitCode = 128 + (constants.signals[signal] ?? 0);
      process.kill(process.pid, signal);
    } else {
      process.exit(code);
    }
  });
}

const argv = process.argv.slice(2);
if (argv.length === 0) {
  say('Usage: node scripts/supported-node.mjs <command> [args...] | --bin-dir');
  process.exit(2);
}
try {
  const binDir = supportedBinDir();
  if (argv[0] === '--bin-dir') {
    process.stdout.write(`${binDir}\n`);
  } else {
    run(binDir, argv);
  }
} catch (error) {
  if (!(error instanceof UnsupportedNode)) {
    throw error;
  }
  say(error.message);
  process.exit(1);
}

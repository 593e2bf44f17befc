import { spawnSync } from 'node:child_process';
import { basename, dirname } from 'node:path';

/**
 * Whether git would carry `path` to others: `tracked` (committed already), `unignored` (in a work tree and
 * not ignored: the next `git add .` takes it), or null (ignored, outside any repository, or no git here).
 */
export function gitExposure(path: string): 'tracked' | 'unignored' | null {
  const git = (...args: string[]) => spawnSync('git', ['-C', dirname(path), ...args], { stdio: 'ignore', timeout: 10_000 }).status;
  if (git('rev-parse', '--is-inside-work-tree') !== 0) {
    return null;
  }
  if (git('ls-files', '--error-unmatch', '--', basename(path)) === 0) {
    return 'tracked';
  }
  return git('check-ignore', '-q', '--', basename(path)) === 0 ? null : 'unignored';
}

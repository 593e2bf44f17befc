import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, relative } from 'node:path';

/**
 * Whether git would carry `path` to others: `tracked` (committed already), `unignored` (in a work tree and
 * not ignored: the next `git add .` takes it), or null (ignored, outside any repository, or no git here).
 */
export function gitExposure(path: string): 'tracked' | 'unignored' | null {
  // Asked from the nearest folder that exists: a file about to be created may be in one that does not yet (.cursor/).
  let folder = dirname(path);
  while (!existsSync(folder) && dirname(folder) !== folder) {
    folder = dirname(folder);
  }
  const file = relative(folder, path);
  const git = (...args: string[]) => spawnSync('git', ['-C', folder, ...args], { stdio: 'ignore', timeout: 10_000 }).status;
  if (git('rev-parse', '--is-inside-work-tree') !== 0) {
    return null;
  }
  if (git('ls-files', '--error-unmatch', '--', file) === 0) {
    return 'tracked';
  }
  return git('check-ignore', '-q', '--', file) === 0 ? null : 'unignored';
}

import { closeSync, constants, existsSync, fchmodSync, lstatSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

import { CliError } from '@app/cli-terminal';

import { splitRepositoryUrl } from './repository-url';
import { runProcess } from './run-process';
import { BundledTemplate, bundledTemplateDirectory, copyTemplate } from './templates';

export const CLONE_TIMEOUT_MS = 300_000;
/** At most 100 characters: a directory name, and the compose project's, far below a file system's limit. */
export const PROJECT_NAME = /^[A-Za-z0-9_-]{1,100}$/;

/** Where a new project comes from: a template bundled with svc (copied, offline), or a git repository (cloned). */
export type ProjectSource = { template: BundledTemplate } | { repository: string };

export function projectNameProblem(name: string, cwd: string): string | null {
  if (!PROJECT_NAME.test(name)) {
    return `Invalid project name '${name}': use one path segment of at most 100 letters, digits, '-' and '_'.`;
  }
  if (existsSync(join(cwd, name))) {
    return `${join(cwd, name)} already exists.`;
  }
  return null;
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Seeds `.env` from `example.env` with owner-only permissions. An existing `.env` is kept; a symlinked
 * `example.env` or `.env` is refused (it could read or overwrite a file outside the project).
 */
function seedEnvFile(dir: string): boolean {
  const example = join(dir, 'example.env');
  const target = join(dir, '.env');
  if (isSymlink(example) || isSymlink(target)) {
    throw new CliError(`Refusing to seed .env in ${dir}: example.env or .env is a symbolic link.`, 'Check the template repository.');
  }
  if (!existsSync(example) || existsSync(target)) {
    return false;
  }
  // Created exclusively, without following links, owner-only from the first byte: a .env holds secrets.
  const fd = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, readFileSync(example));
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * `git clone --depth 1` of a repository into `path`, without its history. The URL's credentials reach git
 * through the environment; `--` keeps a repository starting with `-` from being read as an option.
 */
async function cloneRepository(repository: string, path: string): Promise<void> {
  const { url, env } = splitRepositoryUrl(repository);
  const clone = await runProcess('git', ['clone', '--depth', '1', '--quiet', '--', url, path], {
    env,
    timeoutMs: CLONE_TIMEOUT_MS,
    capture: true,
    missing: 'git is required to create a project from a repository (-u): install git and re-run.',
  });
  if (clone.code !== 0) {
    throw new CliError(`git clone failed: ${clone.stderr || `exit code ${clone.code}`}`, 'Check the template name or --url.');
  }
  rmSync(join(path, '.git'), { recursive: true, force: true });
}

/**
 * Creates `<cwd>/<name>` from a bundled template (a plain copy: no git, no network) or a cloned
 * repository, then seeds `.env`. Nothing is left behind when any step fails.
 */
export async function scaffoldProject(source: ProjectSource, name: string, cwd: string): Promise<{ path: string; seededEnv: boolean }> {
  const problem = projectNameProblem(name, cwd);
  if (problem) {
    throw new CliError(problem);
  }
  const path = join(cwd, name);
  try {
    if ('template' in source) {
      copyTemplate(bundledTemplateDirectory(source.template), path);
    } else {
      await cloneRepository(source.repository, path);
    }
    return { path, seededEnv: seedEnvFile(path) };
  } catch (error) {
    // A directory that appeared meanwhile (EEXIST) is someone else's: never removed.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || (error as NodeJS.ErrnoException).path !== path) {
      rmSync(path, { recursive: true, force: true });
    }
    throw error;
  }
}

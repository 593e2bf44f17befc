import { closeSync, constants, existsSync, fchmodSync, lstatSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

import { CliError } from '@app/cli-terminal';

import { runProcess } from './run-process';

/** The spec's starter templates; each is the repository `<SVC_TEMPLATE_BASE_URL>/<name>`. */
export const TEMPLATES = {
  'platform-docker': 'Docker (compose)',
  'platform-aws': 'AWS',
  'platform-azure': 'Azure',
  'platform-fly': 'Fly.io',
  'platform-gcp': 'Google Cloud',
  'platform-helm': 'Helm / Kubernetes',
  'platform-modal': 'Modal',
  'platform-railway': 'Railway',
  'platform-render': 'Render',
} as const;

export type TemplateName = keyof typeof TEMPLATES;
export const DEFAULT_TEMPLATE: TemplateName = 'platform-docker';
export const TEMPLATE_NAMES = Object.keys(TEMPLATES) as TemplateName[];

export const CLONE_TIMEOUT_MS = 300_000;
export const PROJECT_NAME = /^[A-Za-z0-9_-]+$/;

export function templateRepository(baseUrl: string, template: TemplateName): string {
  return `${baseUrl}/${template}`;
}

export function projectNameProblem(name: string, cwd: string): string | null {
  if (!PROJECT_NAME.test(name)) {
    return `Invalid project name '${name}': use one path segment of letters, digits, '-' and '_'.`;
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

/** `git clone --depth 1` of the template into `<cwd>/<name>`, without its history, with `.env` seeded. */
export async function scaffoldProject(repository: string, name: string, cwd: string): Promise<{ path: string; seededEnv: boolean }> {
  const problem = projectNameProblem(name, cwd);
  if (problem) {
    throw new CliError(problem);
  }
  const path = join(cwd, name);
  const clone = await runProcess('git', ['clone', '--depth', '1', '--quiet', repository, path], {
    timeoutMs: CLONE_TIMEOUT_MS,
    capture: true,
    missing: 'git is required to create a project: install git and re-run.',
  }).catch((error: unknown) => {
    rmSync(path, { recursive: true, force: true });
    throw error;
  });
  if (clone.code !== 0) {
    rmSync(path, { recursive: true, force: true });
    throw new CliError(`git clone failed: ${clone.stderr || `exit code ${clone.code}`}`, 'Check the template name or --url.');
  }
  rmSync(join(path, '.git'), { recursive: true, force: true });
  try {
    return { path, seededEnv: seedEnvFile(path) };
  } catch (error) {
    rmSync(path, { recursive: true, force: true });
    throw error;
  }
}

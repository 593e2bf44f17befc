import { closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { CliError } from '@app/cli-terminal';

/** The starter templates (`svc create -t`), each with a one-line description. */
export const TEMPLATES = {
  'platform-docker': 'Docker (compose): PostgreSQL, api and worker from the platform image',
  'platform-node': "Node.js: the platform checkout's npm start, no Docker",
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
/** The templates that ship in this repository's `templates/` folder; the other names are accepted but not bundled. */
export const BUNDLED_TEMPLATES = ['platform-docker', 'platform-node'] as const satisfies readonly TemplateName[];
export type BundledTemplate = (typeof BUNDLED_TEMPLATES)[number];

export function isBundled(template: TemplateName): template is BundledTemplate {
  return (BUNDLED_TEMPLATES as readonly string[]).includes(template);
}

/** The error for a spec template name this version does not ship: exit 1 with the alternatives, nothing cloned. */
export function unbundledTemplateError(template: string): CliError {
  return new CliError(
    `Template '${template}' is not bundled with this version of svc.`,
    `Bundled templates: ${BUNDLED_TEMPLATES.join(', ')}; or use -u <git url>`,
  );
}

/**
 * The platform checkout the CLI runs from: the nearest directory above this file holding the
 * `platform-service` package.json and a `templates/` folder. The built CLI runs from
 * dist/libs/cli-project/src, sources from libs/cli-project/src: both find the same root.
 */
export function platformRoot(from: string = __dirname): string | null {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file) && existsSync(join(dir, 'templates'))) {
      try {
        if ((JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'platform-service') {
          return dir;
        }
      } catch {
        // Not our package.json; keep looking above.
      }
    }
  }
  return null;
}

export function bundledTemplateDirectory(template: BundledTemplate): string {
  const root = platformRoot();
  const directory = root && join(root, 'templates', template);
  if (!directory || !existsSync(directory)) {
    throw new CliError(
      `The bundled template '${template}' is missing from this installation of svc.`,
      'Run svc from a complete platform checkout, or use -u <git url>.',
    );
  }
  return directory;
}

/** Local files a template folder may hold in a checkout (git-ignored) that never belong in a new project. */
function isLocalOnly(name: string): boolean {
  return name === '.env' || name.startsWith('.env.') || name === 'node_modules';
}

/**
 * Copies a template folder into `target` (which must not exist yet). Only directories and regular
 * files are copied: a symbolic link (or any other kind of entry) in the template is refused, so the
 * copy can never read or write outside it. Files are created exclusively with 0644, or 0755 when
 * the owner could execute the original; the umask applies; nothing else of the original is kept.
 */
export function copyTemplate(source: string, target: string): void {
  mkdirSync(target, { mode: 0o755 });
  for (const entry of readdirSync(source)) {
    if (isLocalOnly(entry)) {
      continue;
    }
    const from = join(source, entry);
    const to = join(target, entry);
    const stat = lstatSync(from);
    if (stat.isDirectory()) {
      copyTemplate(from, to);
    } else if (stat.isFile()) {
      copyFile(from, to, stat.mode & 0o100 ? 0o755 : 0o644);
    } else {
      const kind = stat.isSymbolicLink() ? 'a symbolic link' : 'not a regular file';
      throw new CliError(`Refusing to copy ${from}: it is ${kind}.`, 'Templates hold only directories and regular files.');
    }
  }
}

function copyFile(from: string, to: string, mode: number): void {
  const fd = openSync(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    writeSync(fd, readFileSync(from));
  } finally {
    closeSync(fd);
  }
}

import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

import { CliError } from '@app/cli-terminal';

/** Token-bearing config files: readable by their owner only. */
export const SECRET_FILE_MODE = 0o600;

export function readTextIfExists(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return null;
    }
    throw new CliError(`Could not read ${path}: ${(error as Error).message}`);
  }
}

/**
 * What JSON.parse says of a file, less its quote of the text around an unexpected token (`Unexpected token 's',
 * "{"a": svc_pat_SE"... is not valid JSON`): a client's config holds tokens. Its other messages give a position only.
 */
function jsonFault(error: Error): string {
  return error.message.replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, '');
}

/** The file's JSON object, or null when the file does not exist. Anything else is refused. */
export function readJsonObject(path: string): Record<string, unknown> | null {
  const text = readTextIfExists(path);
  if (text === null || text.trim() === '') {
    return text === null ? null : {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliError(
      `Refusing to modify ${path}: the existing file is not valid JSON (${jsonFault(error as Error)}).`,
      'Fix or move the file, then re-run.',
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CliError(`Refusing to modify ${path}: it does not hold a JSON object.`, 'Fix or move the file, then re-run.');
  }
  return parsed as Record<string, unknown>;
}

/** A symlinked config could redirect a token into any file the link names: never written through. */
export function refuseSymlink(path: string): void {
  try {
    if (lstatSync(path).isSymbolicLink()) {
      throw new CliError(`Refusing to write ${path}: it is a symbolic link.`, 'Replace the link with a regular file, then re-run.');
    }
  } catch (error) {
    if (error instanceof CliError) {
      throw error;
    }
  }
}

function existingMode(path: string): number | null {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return null;
  }
}

/**
 * Replaces a file atomically: a temporary file in the same directory, fsynced, then renamed over the
 * target, so a crash leaves either the old or the new file. Token-bearing files land with mode 0600
 * (also when merged into an existing file); otherwise the existing mode is kept.
 */
export function writeFileAtomically(path: string, text: string, options: { secret: boolean }): void {
  refuseSymlink(path);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const keptMode = existingMode(path);
  const mode = options.secret ? SECRET_FILE_MODE : keptMode;
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temporary, 'wx', mode ?? 0o666);
  try {
    if (mode !== null) {
      fchmodSync(fd, mode);
    }
    writeSync(fd, text);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temporary, path);
  } catch (error) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    try {
      unlinkSync(temporary);
    } catch {
      // never created or already renamed
    }
    throw new CliError(`Could not write ${path}: ${(error as Error).message}`);
  }
}

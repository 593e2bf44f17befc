/** Option parsers shared by the commands (commander hands each value to its @Option method). */

import { CliError } from '@app/cli-terminal';
import { parseClientList } from '@app/client-adapters';
import { SERVICE_ACCOUNT_NAME } from '@app/principal';

/** A repeatable option: every occurrence is kept, in order. */
export function collect<T extends string>(value: T, previous: T[] | undefined): T[] {
  return [...(previous ?? []), value];
}

/**
 * `-s a -s b` and `-s a,b` alike: a scope never holds a comma, and a list is how people write several. A value
 * naming none (`-s ''`, `-s ,`) is a usage error: sent as an empty list it would mint a token that may do nothing.
 */
export function collectScopes(value: string, previous: string[] | undefined): string[] {
  const scopes = value
    .split(',')
    .map((scope) => scope.trim())
    .filter((scope) => scope !== '');
  if (scopes.length === 0) {
    throw new InvalidOptionValue('Name a scope, e.g. agents:run (repeat -s, or separate them with commas).');
  }
  return [...(previous ?? []), ...scopes];
}

export interface JsonOptions {
  json?: boolean;
}

/** Options of every command that talks to the service. */
export interface ServiceOptions extends JsonOptions {
  url?: string;
  allowHttp?: boolean;
  yes?: boolean;
}

/** Options of every command that mints service-account tokens. */
export interface MintOptions extends ServiceOptions {
  scopes?: string[];
  expires?: string;
  privileged?: boolean;
}

/** Thrown by an option parser: commander reports it as a usage error naming the option (exit 2). */
export class InvalidOptionValue extends Error {
  readonly code = 'commander.invalidArgument';
}

/** An option value that must be one of a fixed list. */
export function oneOf<T extends string>(value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new InvalidOptionValue(`Allowed values: ${allowed.join(', ')}.`);
  }
  return value as T;
}

/** A whole number from 1 to `max` (`--limit`). */
export function countUpTo(value: string, max: number): number {
  const count = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!Number.isSafeInteger(count) || count < 1 || count > max) {
    throw new InvalidOptionValue(`Use a whole number from 1 to ${max}.`);
  }
  return count;
}

/** `--clients a,b`: checked while the flags are parsed (unknown or no client is a usage error, exit 2); kept as given. */
export function parseClientsOption(value: string): string {
  try {
    parseClientList(value);
  } catch (error) {
    if (error instanceof CliError) {
      throw new InvalidOptionValue(error.hint ? `${error.message.replace(/\.$/, '')}. ${error.hint}` : error.message);
    }
    throw error;
  }
  return value;
}

/** A service account's name as the api takes it; anything else is a usage error (exit 2) before any request. */
export function serviceAccountNameProblem(name: string): string | null {
  return SERVICE_ACCOUNT_NAME.test(name)
    ? null
    : `Invalid service account name '${name}': use a lowercase slug of a-z, 0-9, '-' and '_', starting with a letter or digit, at most 63 characters.`;
}

import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { parse } from 'smol-toml';

import { CliError } from '@app/cli-terminal';

import { ClientAdapter, ClientContext, McpEntry, TOKEN_PLACEHOLDER, WriteOutcome } from './client-adapter';
import { readTextIfExists, refuseSymlink, writeFileAtomically } from './config-file';
import { authorizationHeader, bearerToken } from './json-mcp-client';

type TomlTable = Record<string, unknown>;

/** Plain data (smol-toml builds null-prototype objects), so parsed documents compare by content. */
function plain(value: unknown): TomlTable {
  return JSON.parse(JSON.stringify(value)) as TomlTable;
}

function parseToml(path: string, text: string): TomlTable {
  try {
    return plain(parse(text));
  } catch (error) {
    throw new CliError(
      `Refusing to modify ${path}: the existing file is not valid TOML (${(error as Error).message.split('\n')[0]}).`,
      'Fix or move the file, then re-run.',
    );
  }
}

function servers(document: TomlTable): TomlTable {
  const table = document.mcp_servers;
  return table && typeof table === 'object' && !Array.isArray(table) ? (table as TomlTable) : {};
}

function withoutServer(document: TomlTable, name: string): TomlTable {
  const copy = plain(document);
  const table = servers(copy);
  delete table[name];
  if (copy.mcp_servers && Object.keys(table).length === 0) {
    delete copy.mcp_servers;
  }
  return copy;
}

const ANY_HEADER = /^\s*\[/;

/** `[mcp_servers.<name>]`, quoted or not, and its sub-tables `[mcp_servers.<name>.…]`. */
function ownsHeader(line: string, name: string): boolean {
  const escaped = name.replace(/[-]/g, '\\-');
  return new RegExp(`^\\s*\\[\\s*mcp_servers\\s*\\.\\s*(${escaped}|"${escaped}"|'${escaped}')\\s*(\\]|\\.)`).test(line);
}

/** The text with the server's table (and its sub-tables) cut out; comments and other tables stay. */
function cutServerTable(text: string, name: string): string {
  const kept: string[] = [];
  let inside = false;
  for (const line of text.split('\n')) {
    if (ANY_HEADER.test(line)) {
      inside = ownsHeader(line, name);
    }
    if (!inside) {
      kept.push(line);
    }
  }
  return kept.join('\n').replace(/\n+$/, '');
}

function tomlString(value: string): string {
  return JSON.stringify(value);
}

/**
 * code-agent-b (Codex): `~/.codex/config.toml` (or `$CODEX_HOME/config.toml`), table
 * `[mcp_servers.<name>]` with `url` and `http_headers = { "Authorization" = "Bearer …" }`. No project
 * scope. Edits are textual so comments and formatting survive, and every edit is checked with a real
 * TOML parser: the result must hold exactly the old document plus (or minus) this one server.
 */
export class CodeAgentB implements ClientAdapter {
  readonly id = 'code-agent-b' as const;
  readonly projectScope = false;
  private readonly dir: string;
  private readonly path: string;

  constructor(context: ClientContext) {
    this.dir = context.env.CODEX_HOME ?? join(context.home, '.codex');
    this.path = join(this.dir, 'config.toml');
  }

  detect(): boolean {
    return existsSync(this.dir) && statSync(this.dir).isDirectory();
  }

  location(): string {
    return this.path;
  }

  resolve(name: string): McpEntry | null {
    return this.entries().find((entry) => entry.name === name) ?? null;
  }

  /** One scope: the entry the client resolves. */
  entryIn(name: string): McpEntry | null {
    return this.resolve(name);
  }

  /** One config file, read wherever the client starts. */
  entriesElsewhere(): McpEntry[] {
    return [];
  }

  entries(): McpEntry[] {
    let document: TomlTable;
    try {
      const text = readTextIfExists(this.path);
      if (text === null) {
        return [];
      }
      document = parse(text) as TomlTable;
    } catch {
      return []; // a file that cannot be read or parsed holds no entry the client could use either
    }
    return Object.entries(servers(document)).flatMap(([name, raw]) => {
      const entry = raw as { url?: unknown; http_headers?: unknown };
      return entry && typeof entry.url === 'string'
        ? [{ name, url: entry.url, token: bearerToken(authorizationHeader(entry.http_headers)), location: this.path }]
        : [];
    });
  }

  unreadable(): string[] {
    try {
      const text = readTextIfExists(this.path);
      if (text !== null) {
        parseToml(this.path, text);
      }
      return [];
    } catch (error) {
      return [error instanceof Error ? error.message : String(error)];
    }
  }

  write(name: string, url: string, token: string | null): WriteOutcome {
    writeFileAtomically(this.path, this.edited(name, url, token), { secret: token !== null });
    return { location: this.path };
  }

  replaceToken(entry: McpEntry, token: string): void {
    this.write(entry.name, entry.url, token);
  }

  check(name: string, url: string): void {
    this.edited(name, url, TOKEN_PLACEHOLDER);
    refuseSymlink(this.path);
  }

  /** The config text with the entry set, as `write` would save it; nothing is written. */
  private edited(name: string, url: string, token: string | null): string {
    const text = readTextIfExists(this.path) ?? '';
    const before = parseToml(this.path, text);
    const block = [`[mcp_servers.${name}]`, `url = ${tomlString(url)}`];
    if (token) {
      block.push(`http_headers = { "Authorization" = ${tomlString(`Bearer ${token}`)} }`);
    }
    const rest = cutServerTable(text, name);
    const next = `${rest ? `${rest}\n\n` : ''}${block.join('\n')}\n`;
    const expected = { url, ...(token ? { http_headers: { Authorization: `Bearer ${token}` } } : {}) };
    this.assertLayout(
      next,
      (after) =>
        isDeepStrictEqual(servers(after)[name], expected) && isDeepStrictEqual(withoutServer(after, name), withoutServer(before, name)),
    );
    return next;
  }

  remove(name: string, location: string, url?: string): boolean {
    const text = location === this.path ? readTextIfExists(this.path) : null;
    if (text === null) {
      return false;
    }
    const before = parseToml(this.path, text);
    if (!(name in servers(before)) || (url !== undefined && (servers(before)[name] as { url?: unknown } | undefined)?.url !== url)) {
      return false;
    }
    const next = `${cutServerTable(text, name)}\n`;
    this.assertLayout(
      next,
      (after) => isDeepStrictEqual(withoutServer(after, name), withoutServer(before, name)) && !(name in servers(after)),
    );
    writeFileAtomically(this.path, next, { secret: false });
    return true;
  }

  loginInstructions(name: string): string[] {
    return [`Run: codex mcp login ${name}`];
  }

  private assertLayout(text: string, holds: (after: TomlTable) => boolean): void {
    let after: TomlTable | null;
    try {
      after = plain(parse(text));
    } catch {
      after = null;
    }
    if (!after || !holds(after)) {
      throw new CliError(
        `Refusing to modify ${this.path}: unsupported TOML layout for mcp_servers (the server is defined inline or with dotted keys).`,
        'Move the server into its own [mcp_servers.<name>] table, then re-run.',
      );
    }
  }
}

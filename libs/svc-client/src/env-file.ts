import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The env files discovery reads SERVICE_URL from, in order. */
export const ENV_FILES = ['.env.production', '.env'] as const;

function unquote(raw: string): string {
  const value = raw.trim();
  const quote = value[0];
  if (quote === '"' || quote === "'") {
    const end = value.indexOf(quote, 1);
    return end > 0 ? value.slice(1, end) : value.slice(1);
  }
  // An inline comment starts at a '#' after whitespace, so a URL #fragment survives.
  return value.replace(/\s+#.*$/, '').trim();
}

/** The last value of `key` in a dotenv-style file, or null (absent, unreadable, or set empty). */
export function readEnvFileValue(path: string, key: string): string | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  let value: string | null = null;
  for (const rawLine of text.replace(/^\uFEFF/, '').split(/\r?\n/)) {
    const line = rawLine.trim().replace(/^export\s+/, '');
    if (!line || line.startsWith('#')) {
      continue;
    }
    const equals = line.indexOf('=');
    if (equals > 0 && line.slice(0, equals).trim() === key) {
      const parsed = unquote(line.slice(equals + 1));
      value = parsed && parsed !== '/' ? parsed : null;
    }
  }
  return value;
}

/** SERVICE_URL from `.env.production`, else `.env`, in the given directory. */
export function serviceUrlFromEnvFiles(dir: string): { url: string; file: string } | null {
  for (const file of ENV_FILES) {
    const url = readEnvFileValue(join(dir, file), 'SERVICE_URL');
    if (url) {
      return { url, file };
    }
  }
  return null;
}

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { readJsonObject } from './config-file';

describe('readJsonObject on a config that does not parse', () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-file-'));
  afterEach(() => rmSync(join(dir, 'mcp.json'), { force: true }));

  const refusal = (text: string): string => {
    const path = join(dir, 'mcp.json');
    writeFileSync(path, text);
    try {
      readJsonObject(path);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('the file was read');
  };

  it('says where it stopped and never quotes the text around it, which may be part of a token', () => {
    // JSON.parse quotes the text around an unexpected token; a bare token is one.
    const bare = refusal('{"mcpServers": {"x": {"headers": {"Authorization": svc_pat_AbCdEfGhIjKlMnOp}}}}');
    expect(bare).toMatch(/is not valid JSON \(Unexpected token 's'\)\.$/);
    expect(bare).not.toContain('svc_pat_');
    expect(bare).not.toContain('AbCd');
    // Its other messages give a position only, and are kept.
    const unclosed = refusal('{"Authorization": "Bearer svc_pat_AbCdEfGhIjKlMnOp" x}');
    expect(unclosed).toMatch(/after property value in JSON at position \d+ \(line 1 column \d+\)\)\.$/);
    expect(unclosed).not.toContain('AbCd');
  });
});

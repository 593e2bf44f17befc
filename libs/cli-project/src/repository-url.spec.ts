import { describe, expect, it } from 'vitest';

import { splitRepositoryUrl } from './repository-url';

describe('repository URLs handed to git', () => {
  it('moves an http(s) password out of the URL into an Authorization header, and shows the URL redacted', () => {
    const split = splitRepositoryUrl('https://deploy:s3cr%40t@git.example/x.git');
    expect(split.url).toBe('https://git.example/x.git');
    expect(split.shown).toBe('https://***@git.example/x.git');
    expect(split.env.GIT_CONFIG_KEY_0).toBe('http.https://git.example/x.git.extraHeader');
    expect(Buffer.from(split.env.GIT_CONFIG_VALUE_0.replace('Authorization: Basic ', ''), 'base64').toString()).toBe('deploy:s3cr@t');
  });

  it("moves a user name alone (often a token) out of an http(s) URL into git's user name for that URL", () => {
    const split = splitRepositoryUrl('https://ghp_T0kenAsUserName@git.example/x.git');
    expect(split.url).toBe('https://git.example/x.git');
    expect(split.shown).toBe('https://***@git.example/x.git');
    expect(split.env).toEqual({
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'credential.https://git.example/x.git.username',
      GIT_CONFIG_VALUE_0: 'ghp_T0kenAsUserName',
    });
  });

  it('leaves a URL without credentials, an ssh user and a path to git as they are', () => {
    for (const url of ['https://git.example/x.git', 'git@git.example:x.git', './local/repo', 'ssh://git@git.example/x.git']) {
      expect(splitRepositoryUrl(url)).toEqual({ url, env: {}, shown: url });
    }
  });

  it('refuses what would put a password in argv or output: an unparsable URL with credentials, a password for ssh, a bad escape', () => {
    for (const url of [
      'https://user:s3cret@127.0.0.1:99999/x.git',
      'https://user:SECRET@[::1:9/x.git',
      'ssh://user:s3cret@host/x.git',
      'https://user:pa%zz@host/x.git',
    ]) {
      let message = '';
      try {
        splitRepositoryUrl(url);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, url).not.toBe('');
      expect(message).not.toMatch(/s3cret|SECRET|pa%zz/);
    }
  });
});

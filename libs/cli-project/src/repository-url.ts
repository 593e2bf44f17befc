import { CliError } from '@app/cli-terminal';

/**
 * A repository URL as git gets it: credentials in an http(s) URL (`https://user:token@host/x.git`, or a token as
 * the user name, `https://<token>@host/x.git`) never go in git's argv, where any user of the machine can read
 * them (`ps`), nor in anything svc prints.
 */
export interface RepositoryUrl {
  /** The URL without its credentials: git's argument. */
  url: string;
  /** Environment that hands git the credentials as an Authorization header for that URL only. */
  env: Record<string, string>;
  /** The URL with its credentials replaced by `***`: what svc prints. */
  shown: string;
}

/** `scheme://...@`: a URL whose authority holds a user (and maybe a password). */
const USERINFO = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i;

export function splitRepositoryUrl(repository: string): RepositoryUrl {
  let parsed: URL;
  try {
    parsed = new URL(repository);
  } catch {
    if (USERINFO.test(repository)) {
      // Passed on as typed, its password would reach git's argv and svc's output.
      throw new CliError(
        'The repository URL holds credentials but is not a valid URL',
        'Check its host and port, or use a git credential helper',
      );
    }
    return { url: repository, env: {}, shown: repository }; // a path or scp-like `git@host:x.git`: nothing secret
  }
  const secured = ['http:', 'https:'].includes(parsed.protocol);
  // An ssh user (`ssh://git@host`) is no secret; over http(s) a user name alone is often a token (`https://<token>@host`).
  if (!parsed.password && !(secured && parsed.username)) {
    return { url: repository, env: {}, shown: repository };
  }
  if (!secured) {
    throw new CliError(
      `svc passes a password to git only for http(s) URLs, not ${parsed.protocol}`,
      'Use an SSH key or a git credential helper',
    );
  }
  let username: string;
  let password: string;
  try {
    username = decodeURIComponent(parsed.username);
    password = decodeURIComponent(parsed.password);
  } catch {
    throw new CliError("The repository URL's credentials hold a malformed percent-escape");
  }
  parsed.username = '';
  parsed.password = '';
  const url = parsed.href;
  return {
    url,
    // With a password: an Authorization header for that URL. A user name alone: git's default user name for that
    // URL, so git asks its helpers (or the terminal) for the password exactly as it would with the name in the URL.
    env: {
      GIT_CONFIG_COUNT: '1',
      ...(password
        ? {
            GIT_CONFIG_KEY_0: `http.${url}.extraHeader`,
            GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
          }
        : { GIT_CONFIG_KEY_0: `credential.${url}.username`, GIT_CONFIG_VALUE_0: username }),
    },
    shown: url.replace(/^(https?:\/\/)/, '$1***@'),
  };
}

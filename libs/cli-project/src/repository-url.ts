/**
 * A repository URL as git gets it: credentials in an http(s) URL (`https://user:token@host/x.git`) never go
 * in git's argv, where any user of the machine can read them (`ps`), nor in anything svc prints.
 */
export interface RepositoryUrl {
  /** The URL without its credentials: git's argument. */
  url: string;
  /** Environment that hands git the credentials as an Authorization header for that URL only. */
  env: Record<string, string>;
  /** The URL with its credentials replaced by `***`: what svc prints. */
  shown: string;
}

export function splitRepositoryUrl(repository: string): RepositoryUrl {
  let parsed: URL;
  try {
    parsed = new URL(repository);
  } catch {
    return { url: repository, env: {}, shown: repository }; // a path or scp-like `git@host:x.git`: nothing secret
  }
  // Only http(s) userinfo is a credential; ssh's is the login name.
  if (!['http:', 'https:'].includes(parsed.protocol) || (!parsed.username && !parsed.password)) {
    return { url: repository, env: {}, shown: repository };
  }
  const credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  const url = parsed.href;
  return {
    url,
    env: {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: `http.${url}.extraHeader`,
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(credentials).toString('base64')}`,
    },
    shown: url.replace(/^(https?:\/\/)/, '$1***@'),
  };
}

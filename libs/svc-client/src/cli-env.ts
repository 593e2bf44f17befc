/**
 * The environment the svc CLI reads, in one place. The CLI does not load the server's env
 * (libs/config): it runs on operators' machines where none of the server's variables exist.
 */
export interface CliEnv {
  /** Base URL of the service when --url is absent. */
  serviceUrl: string | null;
  /** Admin credential, checked first. */
  adminToken: string | null;
  /** Admin credential fallback: the OS security key. */
  securityKey: string | null;
}

function nonEmpty(value: string | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}

export function readCliEnv(env: NodeJS.ProcessEnv = process.env): CliEnv {
  return {
    serviceUrl: nonEmpty(env.SERVICE_URL),
    adminToken: nonEmpty(env.SVC_ADMIN_TOKEN),
    securityKey: nonEmpty(env.OS_SECURITY_KEY),
  };
}

/** The admin credential svc sends, and where it came from: said when the service refuses it. */
export interface AdminCredential {
  value: string;
  /** The variable it was read from (SVC_ADMIN_TOKEN goes before OS_SECURITY_KEY), or the hidden prompt. */
  source: 'SVC_ADMIN_TOKEN' | 'OS_SECURITY_KEY' | 'prompt';
}

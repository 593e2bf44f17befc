import { CliError } from '@app/cli-terminal';

import { AdminCredential } from './cli-env';
import { Answer, errorDetail, ServiceClient, serviceClient } from './http';

/** Which credential went is the first thing to check after a refusal: SVC_ADMIN_TOKEN wins over a good OS_SECURITY_KEY. */
function whichCredential(source: AdminCredential['source']): string {
  switch (source) {
    case 'SVC_ADMIN_TOKEN':
      return 'svc sent SVC_ADMIN_TOKEN, which goes before OS_SECURITY_KEY';
    case 'OS_SECURITY_KEY':
      return 'svc sent OS_SECURITY_KEY (SVC_ADMIN_TOKEN is unset)';
    case 'prompt':
      return 'svc sent the credential typed at the prompt (SVC_ADMIN_TOKEN and OS_SECURITY_KEY are unset)';
  }
}

/** A 401's hint: the credential is not accepted at all, and which one svc sent. */
function unacceptedCredentialHint(source: AdminCredential['source']): string {
  return `It is wrong, expired or revoked. ${whichCredential(source)}: check or replace it.`;
}

/**
 * svc sent none: it sends no credential to an instance without authentication (see resolveAdminCredential), which
 * answers most calls without one, but not minting or rotating. Exporting one here would change nothing.
 */
export const MISSING_CREDENTIAL_HINT =
  'svc sends no credential to an instance without authentication (the server at that address may not be yours), and such an instance mints and rotates for none. Give the service a security key: start it with OS_SECURITY_KEY set, then export the same key here.';

/**
 * An API of one service called with the operator's credential. A 401 or 403 ends the command:
 * every later call would get the same answer, so the API's own detail is what the operator sees.
 */
export abstract class AdminApi {
  protected readonly client: ServiceClient;
  constructor(
    baseUrl: string,
    protected readonly credential: AdminCredential | null,
  ) {
    this.client = serviceClient(baseUrl, credential?.value ?? null);
  }

  /** What the credential needs, said when the service refuses it. */
  protected abstract readonly credentialHint: string;

  /** How a refused credential is reported. */
  protected refusal(answer: Answer): string {
    return `The service refused the credential (${answer.response.status}: ${errorDetail(answer)}).`;
  }

  /**
   * One call's answer, unless the service refused the credential: a 401 says the credential itself is not
   * accepted (wrong, expired, revoked: replace it), a 403 that it lacks what this call needs.
   */
  protected async send<T extends Answer>(call: Promise<T>): Promise<T> {
    const answer = await call;
    const { status } = answer.response;
    if (status !== 401 && status !== 403) {
      return answer;
    }
    const sent = this.credential?.source;
    if (sent === undefined) {
      throw status === 401
        ? new CliError(
            `This service has no authentication, and this needs a credential it can verify (${errorDetail(answer)}).`,
            MISSING_CREDENTIAL_HINT,
          )
        : new CliError(this.refusal(answer), this.credentialHint);
    }
    throw status === 401
      ? new CliError(`The service did not accept the admin credential (${errorDetail(answer)}).`, unacceptedCredentialHint(sent))
      : new CliError(this.refusal(answer), `${this.credentialHint} (${whichCredential(sent)}.)`);
  }

  /** The body of an answer with `status`; any other answer is a failure of `what`. */
  protected expect<T>(answer: Answer & { data?: T }, status: number, what: string, hint?: string): T {
    if (answer.response.status !== status || answer.data === undefined) {
      throw this.failure(what, answer, hint);
    }
    return answer.data;
  }

  /** Any other unexpected answer: what was being done, and the API's detail. */
  protected failure(what: string, answer: Answer, hint?: string): CliError {
    return new CliError(`${what}: ${errorDetail(answer)}`, hint);
  }

  /** Every row of a paged list: pages read in turn until the last one (or an empty one, should rows go meanwhile). */
  protected async allPages<T>(read: (page: number) => Promise<{ data: T[]; meta?: { total_pages?: number } }>): Promise<T[]> {
    const rows: T[] = [];
    for (let page = 1; ; page += 1) {
      const body = await read(page);
      rows.push(...body.data);
      if (page >= (body.meta?.total_pages ?? 1) || body.data.length === 0) {
        return rows;
      }
    }
  }
}

import { CliError } from '@app/cli-terminal';

import { errorDetail, httpRequest, HttpResult } from './http';

/**
 * An API of one service called with the operator's credential. A 401 or 403 ends the command:
 * every later call would get the same answer, so the API's own detail is what the operator sees.
 */
export abstract class AdminApi {
  constructor(
    protected readonly baseUrl: string,
    protected readonly credential: string | null,
  ) {}

  /** What the credential needs, said when the service refuses it. */
  protected abstract readonly credentialHint: string;

  protected async call(method: string, path: string, json?: unknown): Promise<HttpResult> {
    const result = await httpRequest(method, `${this.baseUrl}${path}`, { credential: this.credential, json });
    if (result.status === 401 || result.status === 403) {
      throw new CliError(`The service refused the credential (${result.status}: ${errorDetail(result)}).`, this.credentialHint);
    }
    return result;
  }

  /** Any other unexpected answer: what was being done, and the API's detail. */
  protected failure(what: string, result: HttpResult, hint?: string): CliError {
    return new CliError(`${what}: ${errorDetail(result)}`, hint);
  }
}

export function queryString(params: Record<string, string | number | boolean | readonly string[] | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) {
      continue;
    }
    for (const item of Array.isArray(value) ? value : [value]) {
      search.append(key, String(item));
    }
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

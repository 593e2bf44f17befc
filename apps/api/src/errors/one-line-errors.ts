import { ErrorRenderer, ValidationErrorBodyDto } from '@app/errors';

import { renderError } from './render-error';

/** Errors on MCP, A2A and WebSocket read like the REST response would: `403: Insufficient permissions. Required scope(s): …`. */
export class OneLineErrors implements ErrorRenderer {
  render(error: unknown, context: string): { status: number; detail: string } {
    const { status, body } = renderError(error, { method: context.split(' ')[0], url: context });
    const detail = typeof body.detail === 'string' ? body.detail : describeIssues(body as ValidationErrorBodyDto);
    return { status, detail: 'error_id' in body && body.error_id ? `${detail} (error_id ${body.error_id})` : detail };
  }
}

function describeIssues(body: ValidationErrorBodyDto): string {
  return `Invalid arguments: ${body.detail.map((issue) => `${issue.loc.slice(1).join('.') || 'arguments'}: ${issue.msg}`).join('; ')}`;
}

import { Provider, Type } from '@nestjs/common';

import { ErrorRenderer } from '@app/errors';

import { A2A_ERROR_RENDERER, A2AEndpoint } from './a2a-endpoint';

/**
 * A2A for every agent, team and workflow, provided in the app's own module (beside its RunsModule, whose
 * RunsService it serves); the app supplies the routes and their scopes, and how it words errors.
 */
export function a2aProviders(errorRenderer: Type<ErrorRenderer>): Provider[] {
  return [A2AEndpoint, { provide: A2A_ERROR_RENDERER, useClass: errorRenderer }];
}

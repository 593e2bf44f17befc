import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';

/**
 * Says when the api begins to stop and when it has stopped, as the worker does: an operator reading a pod's
 * log after a rollout or a kill sees whether the stop was asked for, and whether the drain ended.
 */
@Injectable()
export class StopLog implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Api');

  beforeApplicationShutdown(signal?: string): void {
    // Said as it happens: the listener stays open while the api's own runs get their time (API_SHUTDOWN_TIMEOUT_SECONDS);
    // in a pod, preStop has already taken it out of the Service's endpoints.
    this.logger.log(
      { signal },
      `api stopping${signal ? ` (${signal})` : ''}: its own runs finish or are cancelled, then it stops listening and requests in flight finish`,
    );
  }

  onApplicationShutdown(): void {
    this.logger.log('api stopped');
  }
}

import { CanActivate, Injectable } from '@nestjs/common';

import { Env } from '@app/config';

import { QueueException } from './queue.exception';

/**
 * 503 on a replica with QUEUE_ENABLED=false. A guard, so it runs after the global scope
 * guard (401/403 first, as decided) and before validation (a disabled queue answers 503 whatever the query).
 */
@Injectable()
export class QueueEnabledGuard implements CanActivate {
  constructor(private readonly env: Env) {}

  canActivate(): boolean {
    if (!this.env.QUEUE_ENABLED) {
      throw QueueException.disabled();
    }
    return true;
  }
}

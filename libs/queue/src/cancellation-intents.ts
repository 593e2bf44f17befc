import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';

import { Env } from '@app/config';

import { CancellationIntentEntity } from './cancellation-intent.entity';

/**
 * The one liveness rule of a cancellation intent, as SQL: live for QUEUE_CANCEL_INTENT_TTL_SECONDS (the value
 * of `ttl`, a placeholder) after it was last recorded. `alias` names the intents table in the query.
 */
export function intentIsLive(alias: string, ttl: string): string {
  return `${alias}.requested_at > now() - make_interval(secs => ${ttl})`;
}

/** Records, reads and clears cancellation intents; an intent is live for QUEUE_CANCEL_INTENT_TTL_SECONDS. */
@Injectable()
export class CancellationIntents {
  constructor(
    private readonly env: Env,
    @InjectRepository(CancellationIntentEntity) private readonly intents: Repository<CancellationIntentEntity>,
  ) {}

  /** A repeated cancel renews the intent: it is live for a full TTL from the latest request. One statement for many runs. */
  async record(manager: EntityManager, runIds: string | string[], requestedBy: string | null): Promise<void> {
    await manager
      .createQueryBuilder()
      .insert()
      .into(CancellationIntentEntity)
      .values([runIds].flat().map((runId) => ({ runId, requestedBy, requestedAt: () => 'now()' })))
      .orUpdate(['requested_at', 'requested_by'], ['run_id'])
      .execute();
  }

  async isLive(runId: string, manager: EntityManager = this.intents.manager): Promise<boolean> {
    return manager
      .createQueryBuilder(CancellationIntentEntity, 'intent')
      .where('intent.run_id = :runId', { runId })
      .andWhere(intentIsLive('intent', ':ttl'), { ttl: this.env.QUEUE_CANCEL_INTENT_TTL_SECONDS })
      .getExists();
  }

  async clear(manager: EntityManager, runIds: string | string[]): Promise<void> {
    await manager.delete(CancellationIntentEntity, { runId: Array.isArray(runIds) ? In(runIds) : runIds });
  }
}

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';

import { CredentialKind } from '@app/access';
import { Env } from '@app/config';

import { InternalSecretEntity } from './internal-secret.entity';
import { ScheduleEntity } from './schedule.entity';

export const SCHEDULE_CREDENTIAL_PREFIX = 'svc_sch_';
const SECRET_NAME = 'internal_service_token';
const CREDENTIAL = /^svc_sch_([0-9a-f-]{36})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

/** Whose rights a fire carries: the schedule's creator, as recorded when it was created. */
export interface ScheduleCreator {
  kind: CredentialKind;
  userId: string | null;
  scopes: string[];
  serviceAccountId: string | null;
}

/**
 * The worker's internal credential: `svc_sch_<schedule id>.<expiry>.<HMAC>`, keyed by
 * INTERNAL_SERVICE_TOKEN (or a secret generated once and kept in the database, so every
 * replica agrees). It names one schedule and expires with the fire, so the api can apply
 * exactly that schedule's creator's rights and nothing the raw secret would grant.
 */
@Injectable()
export class ScheduleCredentials {
  private secret: Promise<Buffer> | null = null;

  constructor(
    private readonly env: Env,
    @InjectRepository(InternalSecretEntity) private readonly secrets: Repository<InternalSecretEntity>,
    @InjectRepository(ScheduleEntity) private readonly schedules: Repository<ScheduleEntity>,
  ) {}

  async mint(scheduleId: string, validForSeconds: number): Promise<string> {
    const expiresAt = Math.floor(Date.now() / 1000) + validForSeconds;
    return `${SCHEDULE_CREDENTIAL_PREFIX}${scheduleId}.${expiresAt}.${await this.mac(`${scheduleId}.${expiresAt}`)}`;
  }

  /** The creator of the enabled schedule a valid, unexpired credential names; null otherwise. */
  async resolve(credential: string): Promise<ScheduleCreator | null> {
    const match = CREDENTIAL.exec(credential);
    if (!match || Number(match[2]) * 1000 <= Date.now()) {
      return null;
    }
    const expected = Buffer.from(await this.mac(`${match[1]}.${match[2]}`));
    if (!timingSafeEqual(expected, Buffer.from(match[3]))) {
      return null;
    }
    const schedule = await this.schedules.findOneBy({ id: match[1] });
    if (!schedule?.enabled) {
      return null;
    }
    return {
      kind: schedule.creatorKind,
      userId: schedule.creatorId,
      scopes: schedule.creatorScopes,
      serviceAccountId: schedule.creatorServiceAccountId,
    };
  }

  private async mac(message: string): Promise<string> {
    return createHmac('sha256', await this.key()).update(message).digest('base64url');
  }

  private key(): Promise<Buffer> {
    this.secret ??= this.loadKey().catch((error: unknown) => {
      this.secret = null;
      throw error;
    });
    return this.secret;
  }

  /** The first replica to need it generates the secret; every other one reads the same row. */
  private async loadKey(): Promise<Buffer> {
    if (this.env.INTERNAL_SERVICE_TOKEN) {
      return Buffer.from(this.env.INTERNAL_SERVICE_TOKEN);
    }
    await this.secrets
      .createQueryBuilder()
      .insert()
      .values({ name: SECRET_NAME, value: randomBytes(32).toString('base64url') })
      .orIgnore()
      .execute();
    const row = await this.secrets.findOneByOrFail({ name: SECRET_NAME });
    return Buffer.from(row.value);
  }
}

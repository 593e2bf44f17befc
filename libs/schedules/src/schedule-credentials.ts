import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { isUUID } from 'class-validator';
import { DataSource, Repository } from 'typeorm';

import { CredentialKind } from '@app/access';
import { Env, warnIfShort } from '@app/config';
import { queryPrepared } from '@app/database';
import { LastingCondition } from '@app/logging';

import { InternalSecretEntity } from './internal-secret.entity';
import { securityKeyFingerprint } from './owner-key';
import { ScheduleEntity } from './schedule.entity';
import { normalizedEndpoint } from './schedule-endpoint';
import { runPath, TargetType } from './schedule-target';

export const SCHEDULE_CREDENTIAL_PREFIX = 'svc_sch_';
const SECRET_NAME = 'internal_service_token';
const CREDENTIAL = /^svc_sch_([0-9a-f-]{36})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

/**
 * A credential's parts when it is well formed, names a schedule by a UUID and has not expired; null otherwise. The
 * schedule id is only ever read back by it, so nothing else (36 dashes) reaches the database's uuid column.
 */
function parsedCredential(credential: string): { scheduleId: string; expiresAt: number; mac: string } | null {
  const match = CREDENTIAL.exec(credential);
  if (!match || !isUUID(match[1]) || Number(match[2]) * 1000 <= Date.now()) {
    return null;
  }
  return { scheduleId: match[1], expiresAt: Number(match[2]), mac: match[3] };
}

/**
 * The header a fire's calls carry the key tag in (see keyTag): beside the credential, whose format a release
 * from before the tag still verifies during a rolling update.
 */
export const SCHEDULE_KEY_TAG_HEADER = 'schedule-key-tag';

/** One HTTP call as the api receives it: the method and the path with its query. */
export interface ScheduleCall {
  method: string;
  url: string;
}

/** Whose rights a fire carries: the schedule's owner, as recorded at its last create or PATCH. */
export interface ScheduleOwner {
  scheduleId: string;
  kind: CredentialKind;
  userId: string | null;
  scopes: string[];
  serviceAccountId: string | null;
  /** Owned by a security key other than the one this instance accepts now: the key was rotated since. */
  keyRotated: boolean;
  /** Since when fires have been refused for the owner's kind of credential; null when the last one was accepted. */
  refusedSince: Date | null;
}

/**
 * How long fires may be refused because this instance does not accept the owner's kind of credential before
 * the schedule is disabled. A rolling update runs replicas of two settings at once (a rotated security key, JWT
 * or OAuth being configured), and one still on the old settings refuses what the new ones accept: such a fire
 * fails, and the schedule stays. Refusals that outlast any rollout mean the credential is gone for good.
 */
export const OWNER_REFUSAL_GRACE_SECONDS = 15 * 60;

/** What verifying a fire's call needs of its schedule. */
interface CalledSchedule {
  enabled: boolean;
  method: string;
  endpoint: string;
  target_type: string | null;
  target_id: string | null;
  owner_kind: CredentialKind;
  owner_id: string | null;
  owner_scopes: string[];
  owner_service_account_id: string | null;
  owner_key_fingerprint: string | null;
  owner_refused_since: Date | null;
}

/**
 * Read on every call a fire makes, so in plain SQL, prepared on the pool: through the repository's query
 * builder and entity hydration it cost the api about four times the CPU (190-350 µs against 55 µs a call,
 * measured apart), and TypeORM's query runner a share of what was left.
 */
const CALLED_SCHEDULE = {
  name: 'schedules_called',
  text: `SELECT enabled, method, endpoint, target_type, target_id, owner_kind, owner_id, owner_scopes, owner_service_account_id,
                owner_key_fingerprint, owner_refused_since
           FROM schedules WHERE id = $1`,
};

/**
 * The worker's credential for one call of a fire: `svc_sch_<schedule id>.<expiry>.<HMAC>`, keyed by
 * INTERNAL_SERVICE_TOKEN (or a secret generated once and kept in the database, so every replica
 * agrees). The HMAC covers the call's method and URL, so the credential is good for that call only:
 * the schedule's own method and endpoint, or reading the run that call started. Presented anywhere
 * else it does not verify. The key tag the call carries beside it (derived from the key, saying nothing
 * of it) tells a credential signed with another key apart: api and worker holding different
 * INTERNAL_SERVICE_TOKEN values.
 */
@Injectable()
export class ScheduleCredentials {
  private readonly log = new Logger('ScheduleCredentials');
  private secret: Promise<Buffer> | null = null;
  private readonly otherKey = new LastingCondition();

  constructor(
    private readonly env: Env,
    @InjectRepository(InternalSecretEntity) private readonly secrets: Repository<InternalSecretEntity>,
    @InjectRepository(ScheduleEntity) private readonly schedules: Repository<ScheduleEntity>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {
    warnIfShort(
      'INTERNAL_SERVICE_TOKEN',
      env.INTERNAL_SERVICE_TOKEN,
      32,
      'it keys every schedule credential, and a short one can be guessed',
    );
  }

  async mint(scheduleId: string, validForSeconds: number, call: ScheduleCall): Promise<string> {
    const expiresAt = Math.floor(Date.now() / 1000) + validForSeconds;
    return `${SCHEDULE_CREDENTIAL_PREFIX}${scheduleId}.${expiresAt}.${await this.mac(scheduleId, expiresAt, call)}`;
  }

  /**
   * Whether a fire's credential that did not verify was most likely signed with another key: it came with another
   * key's tag (SCHEDULE_KEY_TAG_HEADER), is unexpired and names an enabled schedule (the tag itself is not signed, so
   * junk with a tag is not taken for a worker's). Said in the log when it starts, then once a minute while it lasts,
   * since every fire then fails until api and worker hold the same key; and once when fires verify again after a
   * minute without such a fire (with workers holding either key, fires come and go: see `resolve`).
   */
  async signedWithAnotherKey(credential: string, tag: string | undefined): Promise<boolean> {
    const parsed = parsedCredential(credential);
    if (tag === undefined || !parsed || tag === (await this.keyTag())) {
      return false;
    }
    const {
      rows: [schedule],
    } = await queryPrepared<CalledSchedule>(this.dataSource, CALLED_SCHEDULE, [parsed.scheduleId]);
    if (!schedule?.enabled) {
      return false;
    }
    this.otherKey.met(1, (fires) =>
      this.log.warn(
        `${fires} schedule fire(s) came with a credential signed with another key: a worker holds another ` +
          'INTERNAL_SERVICE_TOKEN than this api (set the same on both, or on neither); its fires fail until they agree',
      ),
    );
    return true;
  }

  /** The owner of the enabled schedule a valid, unexpired credential names, if it was minted for exactly `call`; null otherwise. */
  async resolve(credential: string, call: ScheduleCall): Promise<ScheduleOwner | null> {
    const parsed = parsedCredential(credential);
    if (!parsed) {
      return null;
    }
    const expected = Buffer.from(await this.mac(parsed.scheduleId, parsed.expiresAt, call));
    if (!timingSafeEqual(expected, Buffer.from(parsed.mac))) {
      return null;
    }
    const {
      rows: [schedule],
    } = await queryPrepared<CalledSchedule>(this.dataSource, CALLED_SCHEDULE, [parsed.scheduleId]);
    if (!schedule?.enabled || !isCallOf(schedule, call)) {
      return null;
    }
    this.otherKey.endedIfQuiet((refused) =>
      this.log.log(`schedule fires verify with this api's key again (${refused} signed with another key since last said)`),
    );
    return {
      scheduleId: parsed.scheduleId,
      kind: schedule.owner_kind,
      userId: schedule.owner_id,
      scopes: schedule.owner_scopes,
      serviceAccountId: schedule.owner_service_account_id,
      keyRotated: await this.keyRotated(schedule.owner_key_fingerprint),
      refusedSince: schedule.owner_refused_since,
    };
  }

  /** A schedule stored before fingerprints were (null) is taken to be the current key's. */
  private async keyRotated(fingerprint: string | null): Promise<boolean> {
    const key = this.env.OS_SECURITY_KEY;
    return fingerprint !== null && (!key || fingerprint !== (await securityKeyFingerprint(key)));
  }

  /**
   * A fire refused because this instance does not accept the owner's kind of credential: the first refusal is
   * remembered, and the schedule is disabled (with `reason`) once refusals have lasted OWNER_REFUSAL_GRACE_SECONDS.
   * True when it is disabled now.
   */
  async refuseOwner(scheduleId: string, reason: string): Promise<boolean> {
    const [rows] = (await this.dataSource.query(
      // Whether refusals have outlasted the grace, read once from the row as it was.
      `UPDATE schedules s SET
         owner_refused_since = COALESCE(s.owner_refused_since, now()),
         enabled = NOT refusal.outlasted,
         next_run_at = CASE WHEN refusal.outlasted THEN NULL ELSE s.next_run_at END,
         disabled_reason = CASE WHEN refusal.outlasted THEN $3 ELSE s.disabled_reason END,
         updated_at = now()
       FROM (SELECT id, COALESCE(owner_refused_since <= now() - make_interval(secs => $2), false) AS outlasted
               FROM schedules WHERE id = $1) refusal
       WHERE s.id = refusal.id AND s.enabled
       RETURNING s.enabled`,
      [scheduleId, OWNER_REFUSAL_GRACE_SECONDS, reason],
    )) as [{ enabled: boolean }[], number];
    return rows.length > 0 && !rows[0].enabled;
  }

  /** A fire accepted after refusals: the replica that refused is gone (a rollout finished), nothing to disable. */
  async ownerAccepted(owner: ScheduleOwner): Promise<void> {
    if (owner.refusedSince) {
      await this.schedules.update({ id: owner.scheduleId }, { ownerRefusedSince: null });
    }
  }

  /** Stops a schedule whose owner can no longer make its call; re-enabling it is an owner's or an admin's decision. */
  async disable(scheduleId: string, reason: string): Promise<void> {
    await this.schedules.update(
      { id: scheduleId, enabled: true },
      { enabled: false, nextRunAt: null, disabledReason: reason, updatedAt: new Date() },
    );
  }

  /** Eight hex digits derived from the key: the same on every process holding it, and no help in guessing it. */
  async keyTag(): Promise<string> {
    return createHmac('sha256', await this.key())
      .update('schedule credential key tag')
      .digest('hex')
      .slice(0, 8);
  }

  private async mac(scheduleId: string, expiresAt: number, call: ScheduleCall): Promise<string> {
    const message = `${scheduleId}.${expiresAt}.${call.method.toUpperCase()} ${call.url}`;
    return createHmac('sha256', await this.key())
      .update(message)
      .digest('base64url');
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

/** The calls a fire of `schedule` makes: its own method and endpoint, and, for a targeted schedule, reading the run it started. */
function isCallOf(schedule: CalledSchedule, call: ScheduleCall): boolean {
  if (call.method.toUpperCase() === schedule.method && call.url === normalizedEndpoint(schedule.endpoint)) {
    return true;
  }
  if (call.method.toUpperCase() !== 'GET' || !schedule.target_type || !schedule.target_id) {
    return false;
  }
  const runs = runPath({ type: schedule.target_type as TargetType, id: schedule.target_id }, '');
  return call.url.startsWith(runs) && isUUID(call.url.slice(runs.length));
}

import { plainToInstance, Transform } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  ValidateBy,
  ValidateIf,
  validateSync,
  ValidationError,
} from 'class-validator';

import { BootError } from './boot-error';
import { isLoopbackHost } from './loopback';

const TRUE_WORDS = ['true', '1', 'yes', 'on'];
const FALSE_WORDS = ['false', '0', 'no', 'off'];
const BOOLEAN_WORDS = [...TRUE_WORDS, ...FALSE_WORDS];
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

/** Parses an env boolean; an unknown word is kept as a string so validation names it. */
function EnvBoolean(): PropertyDecorator {
  return Transform(({ value }: { value: unknown }) => {
    if (typeof value !== 'string') {
      return value;
    }
    const word = value.trim().toLowerCase();
    if (TRUE_WORDS.includes(word)) {
      return true;
    }
    return FALSE_WORDS.includes(word) ? false : value;
  });
}

function IsEnvBoolean(): PropertyDecorator {
  return (target, key) => {
    EnvBoolean()(target, key);
    IsIn([true, false], { message: `must be one of ${BOOLEAN_WORDS.join(', ')}` })(target, key);
  };
}

/** Parses an env integer; anything but digits is kept as a string so validation names it. */
function IsEnvInt(min: number, max = Number.MAX_SAFE_INTEGER): PropertyDecorator {
  return (target, key) => {
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value))(
      target,
      key,
    );
    IsInt({ message: `must be a whole number from ${min} to ${max}` })(target, key);
    Min(min, { message: `must be a whole number from ${min} to ${max}` })(target, key);
    Max(max, { message: `must be a whole number from ${min} to ${max}` })(target, key);
  };
}

/**
 * A URL the PostgreSQL client can read: its parser (WHATWG URL, then percent-decoding of the user and
 * password) fails at the first connection with a bare "Invalid URL" or "URI malformed" naming nothing.
 */
function IsReadableUrl(): PropertyDecorator {
  return ValidateBy({
    name: 'isReadableUrl',
    validator: {
      validate: (value: unknown) => {
        try {
          const url = new URL(String(value));
          decodeURIComponent(url.username);
          decodeURIComponent(url.password);
          return true;
        } catch {
          return false;
        }
      },
      defaultMessage: () => 'is not a readable URL: check the port, and percent-encode characters such as @ : / % in the user and password',
    },
  });
}

/**
 * A URL signing keys are fetched from: https, or http only to a loopback address (a key server on
 * the same machine). Keys fetched over plain HTTP from elsewhere could be swapped in transit.
 */
function IsKeySetUrl(required = ''): PropertyDecorator {
  return ValidateBy({
    name: 'isKeySetUrl',
    validator: {
      validate: (value: unknown) => {
        if (typeof value !== 'string') {
          return false;
        }
        try {
          const url = new URL(value);
          return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
        } catch {
          return false;
        }
      },
      defaultMessage: () => `must be an https URL (http only for a loopback host such as 127.0.0.1 or localhost)${required}`,
    },
  });
}

/** Where the api serves MCP when MCP_ENABLED is on. */
export const MCP_PATH = '/mcp';
/** RFC 9728 well-known prefix of OAuth protected-resource metadata. */
export const PROTECTED_RESOURCE_WELL_KNOWN = '/.well-known/oauth-protected-resource';

const POSTGRES_URL = /^postgres(ql)?:\/\/[^\s]+$/;

/**
 * Every setting of the api and the worker, read once from the environment at boot.
 * Nothing else reads the platform's settings from process.env (a boot failure reads LOG_LEVEL before they are
 * validated; a model agent reads the API key variable its component names).
 */
export class Env {
  @IsOptional()
  @Matches(POSTGRES_URL, { message: 'must be a postgres:// or postgresql:// URL' })
  @IsReadableUrl()
  DATABASE_URL?: string;

  @IsEnvBoolean()
  DB_MIGRATE = true;

  /**
   * Connections of the process's pool for requests (api) and run handlers (worker); the worker's queue engines
   * and each process's readiness probe have their own beside it (README: sizing max_connections).
   */
  @IsEnvInt(1, 1000)
  DATABASE_POOL_SIZE = 20;

  @IsString()
  @MinLength(1)
  HOST = '127.0.0.1';

  @IsEnvInt(0, 65535)
  PORT = 7777;

  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] }, { message: 'must be an http(s) URL' })
  PUBLIC_URL?: string;

  /** Any length is accepted; a short one is warned about at boot (warnIfShort). */
  @IsOptional()
  @IsString()
  OS_SECURITY_KEY?: string;

  /** Any length is accepted; a short one is warned about at boot (warnIfShort). */
  @IsOptional()
  @IsString()
  JWT_SECRET?: string;

  @IsOptional()
  @Matches(/-----BEGIN PUBLIC KEY-----/, { message: 'must be a PEM public key (-----BEGIN PUBLIC KEY-----)' })
  JWT_PUBLIC_KEY?: string;

  @IsOptional()
  @IsKeySetUrl()
  JWT_JWKS_URL?: string;

  @IsOptional()
  @IsString()
  JWT_ISSUER?: string;

  @IsOptional()
  @IsString()
  JWT_AUDIENCE?: string;

  @ValidateIf((env: Env) => env.AUTHORIZATION_ENABLED !== undefined)
  @IsEnvBoolean()
  AUTHORIZATION_ENABLED?: boolean;

  @IsEnvBoolean()
  USER_ISOLATION = false;

  @IsEnvInt(0, 86400)
  SERVICE_ACCOUNT_CACHE_TTL_SECONDS = 30;

  @IsEnvBoolean()
  QUEUE_ENABLED = true;

  @IsEnvInt(1, 86400)
  QUEUE_LOCK_GRACE_SECONDS = 60;

  @IsEnvInt(1)
  QUEUE_CANCEL_INTENT_TTL_SECONDS = 86400;

  @IsEnvInt(0)
  QUEUE_RETENTION_SECONDS = 604800;

  @IsEnvInt(10, 60_000)
  QUEUE_POLL_INTERVAL_MS = 1000;

  @IsEnvInt(1, 1000)
  WORKER_CONCURRENCY = 10;

  @IsEnvInt(0, 10_000)
  WORKER_PREFETCH = 1000;

  /** How far ahead a worker claims: the jobs its slots will start within this long, at the pace its jobs have run. */
  @IsEnvInt(1, 60_000)
  WORKER_PREFETCH_HORIZON_MS = 100;

  @IsEnvInt(0, 3600)
  WORKER_SHUTDOWN_TIMEOUT_SECONDS = 8;
  /**
   * On SIGTERM, how long the runs an api executes itself (sync, streamed, WebSocket) may finish before they are
   * cancelled: short of docker's 10 s stop and a pod's grace, so each caller gets its run's last answer.
   */
  @IsEnvInt(0, 3600)
  API_SHUTDOWN_TIMEOUT_SECONDS = 5;
  /** Unset: the api serves /metrics only on its own port, to platform:admin. Set: also on this port, without a credential. */
  @IsOptional()
  @IsEnvInt(1, 65535)
  API_METRICS_PORT?: number;
  /** Unset: the worker opens no port. Orchestrators set it to probe /livez and /readyz. */
  @IsOptional()
  @IsEnvInt(1, 65535)
  WORKER_HEALTH_PORT?: number;
  /** How often a worker looks for due schedules and queued fires. */
  @IsEnvInt(50, 60000)
  SCHEDULE_TICK_INTERVAL_MS = 1000;

  /** Fires one worker runs at once (each is an HTTP call, possibly following a run). */
  @IsEnvInt(1, 1000)
  SCHEDULE_CONCURRENCY = 100;

  @IsEnvBoolean()
  MCP_ENABLED = false;

  /** External authorization server whose access tokens /mcp accepts (OAuth-protected resource mode). */
  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] }, { message: 'must be an http(s) URL' })
  MCP_OAUTH_ISSUER?: string;

  @ValidateIf((env: Env) => env.MCP_OAUTH_ISSUER !== undefined || env.MCP_OAUTH_JWKS_URL !== undefined)
  @IsKeySetUrl(' (required with MCP_OAUTH_ISSUER)')
  MCP_OAUTH_JWKS_URL?: string;

  /** Expected `aud` of OAuth access tokens; defaults to the /mcp resource URL (RFC 8707). */
  @IsOptional()
  @IsString()
  MCP_OAUTH_AUDIENCE?: string;

  @IsEnvBoolean()
  DEMO_COMPONENTS = false;

  /** Every run records a trace (GET /traces); false records none (and sends nothing to OpenTelemetry). */
  @IsEnvBoolean()
  TRACES_ENABLED = true;

  /** OTLP/HTTP collector base URL (the standard OpenTelemetry variable): the same spans are exported there. Unset: nothing is exported. */
  @IsOptional()
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['http', 'https'] }, { message: 'must be an http(s) URL' })
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;

  /** The service name exported spans carry; defaults to platform-api or platform-worker. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  OTEL_SERVICE_NAME?: string;

  /** A deployment's own agents, teams and workflows: an ES module or CommonJS file (absolute, or relative to the working directory). */
  @IsOptional()
  @IsString()
  COMPONENTS_MODULE?: string;

  /** Any length is accepted; a short one is warned about at boot (warnIfShort). */
  @IsOptional()
  @IsString()
  INTERNAL_SERVICE_TOKEN?: string;

  @IsIn(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` })
  LOG_LEVEL: (typeof LOG_LEVELS)[number] = 'info';

  /** `auto`: coloured lines on a terminal, JSON otherwise. */
  @IsIn(LOG_FORMATS, { message: `must be one of ${LOG_FORMATS.join(', ')}` })
  LOG_FORMAT: (typeof LOG_FORMATS)[number] = 'auto';

  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be 1-64 letters, digits, - or _' })
  OS_ID = 'platform-service';

  @IsString()
  @MinLength(1)
  OS_NAME = 'Platform Service';

  get jwtConfigured(): boolean {
    return Boolean(this.JWT_SECRET || this.JWT_PUBLIC_KEY || this.JWT_JWKS_URL);
  }

  /** JWT scopes are enforced by default whenever a JWT key is configured. */
  get jwtScopesEnforced(): boolean {
    return this.AUTHORIZATION_ENABLED ?? this.jwtConfigured;
  }

  get publicUrl(): string {
    return (this.PUBLIC_URL ?? `http://${this.HOST}:${this.PORT}`).replace(/\/+$/, '');
  }

  /** The URL clients address /mcp by: the OAuth resource identifier. */
  get mcpResourceUrl(): string {
    return `${this.publicUrl}${MCP_PATH}`;
  }

  /** RFC 9728: the metadata of the resource at MCP_PATH, named by the 401 challenge of /mcp. */
  get mcpResourceMetadataUrl(): string {
    return `${this.publicUrl}${PROTECTED_RESOURCE_WELL_KNOWN}${MCP_PATH}`;
  }

  /** /mcp is an OAuth-protected resource only when MCP is on and an authorization server is named. */
  get mcpOAuthConfigured(): boolean {
    return this.MCP_ENABLED && this.MCP_OAUTH_ISSUER !== undefined;
  }

  get databaseUrl(): string {
    if (!this.DATABASE_URL) {
      throw new EnvError(['DATABASE_URL: is required (a postgres:// URL)']);
    }
    return this.DATABASE_URL;
  }
}

export class EnvError extends BootError {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
}

/**
 * Never echoed back in an error message: a typo in a secret must not print the secret. JWT_PUBLIC_KEY is
 * public when right, but the likely mistake is pasting the private key of the pair.
 */
const SECRET_VARIABLES = new Set(['OS_SECURITY_KEY', 'JWT_SECRET', 'INTERNAL_SERVICE_TOKEN', 'DATABASE_URL', 'JWT_PUBLIC_KEY']);

/** A URL's user, password and query values may be credentials (`?access_token=`): the rest says what was set. */
function withoutCredentials(value: string): string {
  try {
    const url = new URL(value);
    if (!url.username && !url.password && !url.search) {
      return value;
    }
    url.username = url.username ? '***' : '';
    url.password = url.password ? '***' : '';
    for (const name of [...url.searchParams.keys()]) {
      url.searchParams.set(name, '***');
    }
    return url.toString();
  } catch {
    return value;
  }
}

function shown(property: string, value: unknown): string {
  if (SECRET_VARIABLES.has(property)) {
    return typeof value === 'string' && value.includes('PRIVATE KEY') ? '(value hidden: a private key)' : '(value hidden)';
  }
  return JSON.stringify(typeof value === 'string' ? withoutCredentials(value) : value);
}

function describe(errors: ValidationError[]): string[] {
  return errors.map((error) => {
    const messages = Object.values(error.constraints ?? {});
    return `${error.property}=${shown(error.property, error.value)}: ${[...new Set(messages)].join('; ')}`;
  });
}

/** Validates the environment and reports every problem at once. Empty strings count as unset. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const present = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ''));
  const env = plainToInstance(Env, present, { exposeDefaultValues: true });
  const errors = validateSync(env, { whitelist: false, skipMissingProperties: false });
  const problems = describe(errors);
  // One listener per port: the same port for both was reported as "in use by another process", naming PORT.
  if (env.API_METRICS_PORT !== undefined && env.API_METRICS_PORT === env.PORT && !errors.some((error) => error.property === 'PORT')) {
    problems.push(`API_METRICS_PORT=${env.API_METRICS_PORT}: must differ from PORT, where the api itself listens`);
  }
  if (problems.length > 0) {
    throw new EnvError(problems);
  }
  return env;
}

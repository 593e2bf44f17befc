export const DB_USER: string;
export function freePort(): Promise<number>;
export function startEmbeddedPostgres(options: {
  databaseDir: string;
  port: number;
  persistent?: boolean;
  /** Required when persistent: the owner-only file that keeps the superuser password. */
  passwordFile?: string;
  log?: (message: unknown) => void;
}): Promise<{ url(database?: string): string; stop(): Promise<void> }>;

export const DB_USER: string;
export function freePort(taken?: readonly number[]): Promise<number>;
export function startEmbeddedPostgres(options: {
  databaseDir: string;
  port: number;
  persistent?: boolean;
  /** Required when persistent: the owner-only file that keeps the superuser password. */
  passwordFile?: string;
  log?: (message: unknown) => void;
  /** PostgreSQL in a process group of its own: a terminal's Ctrl-C does not reach it, stop() does. */
  detached?: boolean;
  /** Called when the server ends without stop(). */
  onExit?: (ended: { code: number | null; signal: NodeJS.Signals | null; lastError: string | null }) => void;
}): Promise<{ url(database?: string): string; stop(): Promise<void>; pid(): number | undefined }>;

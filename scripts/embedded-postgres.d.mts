export const DB_USER: string;
export const DB_PASSWORD: string;
export function freePort(): Promise<number>;
export function startEmbeddedPostgres(options: {
  databaseDir: string;
  port: number;
  persistent?: boolean;
  log?: (message: unknown) => void;
}): Promise<{ url(database?: string): string; stop(): Promise<void> }>;

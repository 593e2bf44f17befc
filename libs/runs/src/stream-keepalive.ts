/** How often a quiet event stream says it is alive: well inside the 60 s idle timeout common to proxies and load balancers. */
export const STREAM_KEEPALIVE_MS = 15_000;

/**
 * Writes an SSE comment line every STREAM_KEEPALIVE_MS until the returned function is called. A run can be quiet
 * for minutes (a long model call, a slow tool), and a proxy that ends idle connections would cut its stream;
 * clients skip comment lines.
 */
export function keepStreamAlive(write: (chunk: string) => void): () => void {
  const timer = setInterval(() => write(': keepalive\n\n'), STREAM_KEEPALIVE_MS);
  return () => clearInterval(timer);
}

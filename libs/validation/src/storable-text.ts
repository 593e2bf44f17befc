/**
 * PostgreSQL text cannot hold U+0000: every surface (REST and MCP arguments, /ws frames, A2A messages)
 * refuses a string carrying it, by name, before it reaches a query.
 */
export function holdsNul(text: string): boolean {
  return text.includes('\u0000');
}

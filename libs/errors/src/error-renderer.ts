/**
 * Turns an error into what a client of a non-REST surface reads (an MCP tool error, an A2A error, a
 * WebSocket frame): the status REST would answer and a one-line explanation. The app supplies it, so
 * every surface words an error as its REST route would.
 */
export interface ErrorRenderer {
  render(error: unknown, context: string): { status: number; detail: string };
}

export interface ReceivedEvent {
  event: string;
  data: Record<string, any>;
  /** performance.now() when the event's bytes arrived. */
  at: number;
}

/**
 * POSTs a `stream=true` run and reads its server-sent events as they arrive (not after the end), calling
 * `onEvent` for each; resolves with all of them once the server closes the stream.
 */
export async function streamRun(
  baseUrl: string,
  path: string,
  options: { token?: string; json: Record<string, unknown>; onEvent?: (event: ReceivedEvent) => void | Promise<void> },
): Promise<ReceivedEvent[]> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) },
    body: JSON.stringify({ ...options.json, stream: true }),
  });
  if (!response.ok || !response.body) {
    throw new Error(`stream answered ${response.status}: ${await response.text()}`);
  }
  const events: ReceivedEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of response.body) {
    const at = performance.now();
    buffer += decoder.decode(bytes, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data !== undefined) {
        const received = { event, data: JSON.parse(data) as Record<string, any>, at };
        events.push(received);
        await options.onEvent?.(received);
      }
    }
  }
  return events;
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface RequestOptions {
  token?: string;
  json?: unknown;
  /** Raw body with its own content type (malformed-input tests). */
  raw?: { body: string; contentType: string };
  headers?: Record<string, string>;
}

/** One real HTTP request; parses JSON bodies, keeps the raw text for everything else. */
export async function call<T = any>(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) {
    headers.authorization = `Bearer ${options.token}`;
  }
  let body: string | undefined;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.raw) {
    headers['content-type'] = options.raw.contentType;
    body = options.raw.body;
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text) {
    parsed = JSON.parse(text);
  }
  return { status: response.status, body: parsed as T, headers: response.headers, text };
}

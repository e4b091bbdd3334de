/**
 * The CLI's client of the operator API (/admin/v1): a base URL and an operator token, so
 * operators need neither the hub's secrets nor NATS access (docs/operations.md, "Operators").
 */
export interface AdminClientConfig {
  /** The hub's base URL, e.g. https://switchyard.example.com (operator-command.ts locateOperatorApi). */
  readonly baseUrl: string;
  /** An operator token (SWITCHYARD_OPERATOR_TOKEN): never on the command line, where ps shows it. */
  readonly token: string;
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
}

/** A problem answer of the operator API, shown to the operator as `code: detail`. */
export class AdminApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(`${code}: ${detail}`);
    this.name = "AdminApiError";
  }
}

export interface AdminAnswer<T> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

export interface AdminClient {
  get<T>(path: string, query?: URLSearchParams): Promise<AdminAnswer<T>>;
  post<T>(path: string, body?: unknown): Promise<AdminAnswer<T>>;
}

export function createAdminClient(config: AdminClientConfig): AdminClient {
  const base = config.baseUrl.replace(/\/+$/, "");
  const doFetch = config.fetch ?? fetch;
  const call = async <T>(method: string, path: string, body?: unknown): Promise<AdminAnswer<T>> => {
    const res = await doFetch(`${base}/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${config.token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(config.timeoutMs ?? 60_000),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw new AdminApiError(
        res.status,
        "bad_answer",
        `the hub answered ${res.status} without JSON`,
      );
    }
    if (res.status >= 400) {
      const problem = (parsed ?? {}) as { code?: string; detail?: string };
      throw new AdminApiError(
        res.status,
        problem.code ?? `http_${res.status}`,
        problem.detail ?? text,
      );
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  };
  return {
    get: (path, query) => call("GET", query && [...query].length > 0 ? `${path}?${query}` : path),
    post: (path, body) => call("POST", path, body),
  };
}

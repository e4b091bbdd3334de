/**
 * A forwarding proxy in front of a REAL hub that injects the failures a hub cannot produce on
 * demand: an answer lost after the hub accepted the request (the client times out), and a 429/503
 * with Retry-After on one request. Everything else is passed through unchanged, so the SDK still
 * talks to the real hub. Other processes (the Python tests, the runtime smoke script) control it
 * over HTTP: POST /__proxy/faults adds a fault, GET /__proxy/seen lists what arrived.
 */

export interface Fault {
  readonly method: "GET" | "POST";
  /** Matches POST /run bodies with this request_id. */
  readonly requestId?: string;
  /** Matches this exact path (e.g. /jobs/job_…). */
  readonly path?: string;
  /**
   * hold: forward to the hub, then keep the answer until the client gives up (or 15 s);
   * status: answer this status with Retry-After without forwarding.
   */
  readonly action: "hold" | "status";
  readonly status?: number;
  readonly retryAfter?: number;
  /** How many matching requests it applies to; default 1. */
  readonly times?: number;
}

export interface Seen {
  readonly method: string;
  readonly path: string;
  readonly body: string;
  readonly requestId: string | undefined;
}

export interface FaultProxy extends AsyncDisposable {
  readonly url: string;
  addFault(fault: Fault): void;
  seen(filter?: { requestId?: string; path?: string }): Seen[];
  stop(): Promise<void>;
}

const HOLD_LIMIT_MS = 15_000;

function requestIdOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { request_id?: unknown };
    return typeof parsed.request_id === "string" ? parsed.request_id : undefined;
  } catch {
    return undefined;
  }
}

function problem(status: number, retryAfter: number | undefined): Response {
  const code = status === 429 ? "rate_limited" : "unavailable";
  const headers: Record<string, string> = { "content-type": "application/problem+json" };
  if (retryAfter !== undefined) headers["retry-after"] = String(retryAfter);
  const body = { type: `https://switchyard.dev/problems/${code}`, title: "Injected", status, code };
  return new Response(JSON.stringify({ ...body, detail: "injected by the test proxy" }), {
    status,
    headers,
  });
}

/** Starts the proxy on 127.0.0.1 forwarding to `target` (the hub's base URL). */
export function startFaultProxy(target: string): FaultProxy {
  const faults: { fault: Fault; left: number }[] = [];
  const log: Seen[] = [];
  const held = new Set<() => void>();

  const take = (seen: Seen): Fault | undefined => {
    const entry = faults.find(
      ({ fault, left }) =>
        left > 0 &&
        fault.method === seen.method &&
        (fault.requestId === undefined || fault.requestId === seen.requestId) &&
        (fault.path === undefined || fault.path === seen.path),
    );
    if (entry) entry.left -= 1;
    return entry?.fault;
  };

  const forward = async (req: Request, url: URL, body: string): Promise<Response> => {
    const headers = new Headers(req.headers);
    headers.delete("host");
    const answer = await fetch(`${target}${url.pathname}${url.search}`, {
      method: req.method,
      headers,
      body: req.method === "GET" ? undefined : body,
      redirect: "manual",
    });
    return new Response(await answer.arrayBuffer(), {
      status: answer.status,
      headers: answer.headers,
    });
  };

  const hold = (req: Request, answer: Response) =>
    new Promise<Response>((resolve) => {
      const release = () => {
        held.delete(release);
        clearTimeout(timer);
        resolve(answer);
      };
      const timer = setTimeout(release, HOLD_LIMIT_MS);
      held.add(release);
      req.signal.addEventListener("abort", release, { once: true });
    });

  const control = async (req: Request, url: URL): Promise<Response> => {
    if (req.method === "POST" && url.pathname === "/__proxy/faults") {
      const fault = (await req.json()) as Fault;
      faults.push({ fault, left: fault.times ?? 1 });
      return new Response(null, { status: 204 });
    }
    const requestId = url.searchParams.get("request_id") ?? undefined;
    const path = url.searchParams.get("path") ?? undefined;
    return Response.json(select({ requestId, path }));
  };

  const select = (filter: { requestId?: string | undefined; path?: string | undefined } = {}) =>
    log.filter(
      (s) =>
        (filter.requestId === undefined || s.requestId === filter.requestId) &&
        (filter.path === undefined || s.path === filter.path),
    );

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname.startsWith("/__proxy/")) return control(req, url);
      const body = req.method === "GET" ? "" : await req.text();
      const seen: Seen = {
        method: req.method,
        path: url.pathname,
        body,
        requestId: url.pathname === "/run" ? requestIdOf(body) : undefined,
      };
      log.push(seen);
      const fault = take(seen);
      if (fault?.action === "status") return problem(fault.status ?? 503, fault.retryAfter);
      const answer = await forward(req, url, body);
      return fault?.action === "hold" ? hold(req, answer) : answer;
    },
  });

  const stop = async () => {
    for (const release of [...held]) release();
    await server.stop(true);
  };
  return {
    url: `http://127.0.0.1:${server.port}`,
    addFault: (fault) => faults.push({ fault, left: fault.times ?? 1 }),
    seen: select,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

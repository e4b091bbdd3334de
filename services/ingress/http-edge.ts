/**
 * The edge of the HTTP API: what every request passes before routing, and what every failure turns
 * into. Nothing here may throw: a request whose URL cannot even be parsed still gets a problem
 * answer, never Bun's error page.
 */
import {
  BadRequestError,
  HeadersTooLargeError,
  InternalError,
  MethodNotAllowedError,
  NotFoundError,
  PROBLEM_CONTENT_TYPE,
  problemResponse,
  UriTooLongError,
} from "../../shared/errors/index.ts";

export interface EdgeLimits {
  readonly maxUrlLength: number;
  /** Sum of header names and values (plus 4 bytes each for ": " and CRLF); 431 above it. */
  readonly maxHeaderBytes?: number;
}

/**
 * Paths the Client API serves and the methods each allows (HEAD comes with GET from Bun): another
 * method on one of them is a 405 with Allow, not a 404. Keep in step with app.ts's routes.
 */
const ENDPOINTS: readonly { readonly pattern: RegExp; readonly allow: string }[] = [
  { pattern: /^\/run$/, allow: "POST" },
  { pattern: /^\/jobs$/, allow: "GET, HEAD" },
  { pattern: /^\/jobs\/[^/]+$/, allow: "GET, HEAD" },
  { pattern: /^\/jobs\/[^/]+\/cancel$/, allow: "POST" },
  { pattern: /^\/executor\/v1\/jobs\/[^/]+\/events$/, allow: "POST" },
  { pattern: /^\/(healthz|readyz|openapi\.json)$/, allow: "GET, HEAD" },
];

/** The last-resort answer when building a problem failed: fixed text, cannot throw. */
const FALLBACK_BODY = JSON.stringify({
  type: "https://switchyard.dev/problems/internal_error",
  title: "Internal error",
  status: 500,
  detail: "Internal error",
  code: "internal_error",
});

export function fallbackProblem(): Response {
  return new Response(FALLBACK_BODY, {
    status: 500,
    headers: { "content-type": PROBLEM_CONTENT_TYPE },
  });
}

/** The request's path, or "/" when its URL does not parse (a bad Host makes that possible). */
export function pathOf(request: Request): string {
  try {
    return new URL(request.url).pathname;
  } catch {
    return "/";
  }
}

/** True when a Host header is `host[:port]` and nothing else (no path, user or query). */
function isHostName(host: string): boolean {
  try {
    const url = new URL(`http://${host}`);
    return url.pathname === "/" && url.search === "" && url.hash === "" && url.username === "";
  } catch {
    return false;
  }
}

/**
 * Verdicts on Host values already seen. Clients send the same few, and each verdict is a URL
 * parse; bounded, so varied hosts cost a parse each and never memory.
 */
const hostVerdicts = new Map<string, boolean>();
const HOST_VERDICTS_MAX = 1024;

function isKnownHostName(host: string): boolean {
  let verdict = hostVerdicts.get(host);
  if (verdict === undefined) {
    verdict = isHostName(host);
    if (hostVerdicts.size >= HOST_VERDICTS_MAX) hostVerdicts.clear();
    hostVerdicts.set(host, verdict);
  }
  return verdict;
}

function headerBytes(headers: Headers): number {
  let total = 0;
  for (const [name, value] of headers) total += name.length + value.length + 4;
  return total;
}

/**
 * Refuses what must not reach routing: an overlong URL (414), too many header bytes (431), a Host
 * that is not a host name (400), CONNECT (405: the hub is an origin server, not a proxy). Returns
 * the answer, or undefined to go on.
 */
export function edgeProblem(request: Request, limits: EdgeLimits): Response | undefined {
  if (request.url.length > limits.maxUrlLength) {
    return problemResponse(
      new UriTooLongError({ detail: `URLs are limited to ${limits.maxUrlLength} characters.` }),
    );
  }
  const maxHeaderBytes = limits.maxHeaderBytes;
  if (maxHeaderBytes !== undefined && headerBytes(request.headers) > maxHeaderBytes) {
    // Bun answers a bare 431 by itself above 16 KiB; below that this gives a problem body.
    return problemResponse(
      new HeadersTooLargeError({
        detail: `Request headers are limited to ${maxHeaderBytes} bytes.`,
      }),
    );
  }
  if (request.method === "CONNECT") {
    return problemResponse(
      new MethodNotAllowedError({
        detail: "CONNECT is not supported: this server is not a proxy.",
        headers: { allow: "GET, HEAD, POST" },
      }),
    );
  }
  // Bun builds the URL from Host (an absolute-form target's own authority is dropped, so the hub
  // never answers for another host): a Host that is no host name leaves a URL that does not parse.
  if (!URL.canParse(request.url)) {
    return problemResponse(new BadRequestError({ detail: "The Host header is not a host name." }));
  }
  const host = request.headers.get("host");
  if (host !== null && !isKnownHostName(host)) {
    return problemResponse(new BadRequestError({ detail: "The Host header is not a host name." }));
  }
  return undefined;
}

/** 405 with Allow for a known path and another method, else 404. */
export function unroutedProblem(request: Request): Response {
  const path = pathOf(request);
  const endpoint = ENDPOINTS.find((e) => e.pattern.test(path));
  if (endpoint) {
    return problemResponse(
      new MethodNotAllowedError({
        detail: `${request.method.slice(0, 20)} is not allowed here; use ${endpoint.allow}.`,
        headers: { allow: endpoint.allow },
      }),
      path,
    );
  }
  return problemResponse(new NotFoundError({ detail: `No such endpoint: ${path.slice(0, 200)}` }));
}

/** Bun's own error callback: reached only if the app itself failed; never its HTML page. */
export function serverErrorResponse(): Response {
  try {
    return problemResponse(new InternalError({ detail: "Internal error" }));
  } catch {
    return fallbackProblem();
  }
}

import { MethodNotAllowedError, NotFoundError } from "../../shared/errors/index.ts";

/** A path the operator surface serves and the methods it allows there. */
interface Endpoint {
  readonly pattern: RegExp;
  readonly allow: string;
}

/** Paths of the operator API (app.ts) and of the console at `base` (console.ts); keep in step. */
function endpoints(prefix: string, base: string | undefined): readonly Endpoint[] {
  const api: Endpoint[] = [
    { pattern: /^\/(session|jobs|counts|overview|callbacks\/failed)$/, allow: "GET, HEAD" },
    { pattern: /^\/jobs\/[^/]+$/, allow: "GET, HEAD" },
    { pattern: /^\/jobs\/[^/]+\/(cancel|retry)$/, allow: "POST" },
    { pattern: /^\/callbacks\/(redeliver|[^/]+\/redeliver)$/, allow: "POST" },
  ];
  const console: Endpoint[] = [
    { pattern: /^\/?$/, allow: "GET, HEAD" },
    { pattern: /^\/(state|assets\/[^/]+)$/, allow: "GET, HEAD" },
    { pattern: /^\/(login|logout)$/, allow: "POST" },
  ];
  const under = (root: string, list: Endpoint[]) =>
    list.map((e) => ({
      pattern: new RegExp(`^${root}${e.pattern.source.slice(1)}`),
      allow: e.allow,
    }));
  return [...under(prefix, api), ...(base === undefined ? [] : under(base, console))];
}

/**
 * The answer to a request no route took: 405 with `Allow` on a path the operator surface serves
 * (another method: PUT, DELETE, PROPFIND…), else 404, as the Client API answers (ingress
 * http-edge.ts).
 */
export function createUnroutedAnswer(options: {
  readonly prefix: string;
  readonly consolePath?: string;
}) {
  const table = endpoints(options.prefix, options.consolePath);
  return (request: Request): MethodNotAllowedError | NotFoundError => {
    const path = new URL(request.url).pathname;
    const endpoint = table.find((e) => e.pattern.test(path));
    if (endpoint === undefined) {
      return new NotFoundError({ detail: `No such endpoint: ${path.slice(0, 200)}` });
    }
    return new MethodNotAllowedError({
      detail: `${request.method.slice(0, 20)} is not allowed here; use ${endpoint.allow}.`,
      headers: { allow: endpoint.allow },
    });
  };
}

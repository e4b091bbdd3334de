import type { Server } from "bun";

/** What a test receiver saw, per request. */
export interface Received {
  path: string;
  headers: Headers;
  body: string;
}

/**
 * Starts a Bun.serve receiver on 127.0.0.1, port 0. `respond` decides the answer per request;
 * every request is recorded first, so tests can assert what was (and was not) delivered.
 */
export function startReceiver(
  respond: (req: Request, path: string) => Response | Promise<Response>,
): {
  server: Server<undefined>;
  received: Received[];
  url: (path: string) => string;
  stop: () => Promise<void>;
} {
  const received: Received[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      received.push({ path, headers: req.headers, body: await req.text() });
      return respond(req, path);
    },
  });
  return {
    server,
    received,
    url: (path) => `http://127.0.0.1:${server.port}${path}`,
    stop: () => server.stop(true),
  };
}

import type { Server as NodeServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Server } from "bun";
import type { Resolver } from "../../shared/net/index.ts";

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

/** A resolver that answers every name with 127.0.0.1, for tests of pinned delivery. */
export const toLoopback: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];

/** Starts a node:http(s) server on 127.0.0.1 with a random port; resolves with the port. */
export async function listenOnLoopback(server: NodeServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** Closes a node:http(s) server and every connection it holds. */
export async function closeServer(server: NodeServer): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

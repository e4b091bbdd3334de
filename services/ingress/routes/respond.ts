import { requireConnected } from "../../../shared/bus/index.ts";

const NO_STORE = { "cache-control": "no-store" };

export function json(
  body: unknown,
  status: number,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...NO_STORE, ...headers },
  });
}

/** 503 at once while NATS is disconnected, instead of waiting for a timeout. */
export function requireNats(natsConnected: () => boolean): void {
  requireConnected(
    natsConnected,
    "The event store is not reachable; nothing was persisted. Retry with the same request_id.",
  );
}

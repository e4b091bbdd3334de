import { Elysia } from "elysia";
import { json } from "./respond.ts";

export interface HealthPluginDeps {
  /** /readyz: NATS connected, topology present, not draining. */
  readonly ready: () => Promise<boolean>;
  readonly openapi: unknown;
}

/** /healthz, /readyz and /openapi.json: open to anyone, no credentials. */
export function healthPlugin(deps: HealthPluginDeps) {
  return new Elysia({ name: "ingress-health", normalize: false })
    .get("/healthz", () => json({ status: "ok" }, 200))
    .get("/readyz", async () =>
      (await deps.ready()) ? json({ status: "ready" }, 200) : json({ status: "not_ready" }, 503),
    )
    .get("/openapi.json", () => json(deps.openapi, 200));
}

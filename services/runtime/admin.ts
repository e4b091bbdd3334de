import { Elysia } from "elysia";
import { listenOrExplain } from "../../shared/http/index.ts";
import type { Logger } from "../../shared/log/index.ts";

export interface AdminServerDeps {
  readonly host: string;
  readonly port: number;
  readonly ready: () => Promise<boolean>;
  readonly metrics?: () => Promise<{ contentType: string; body: string }>;
  readonly logger: Logger;
}

/**
 * /healthz, /readyz and /metrics on the admin port of every service. The ingress's API port does
 * not serve /metrics: keep the admin port out of the Service and Ingress that callers reach.
 */
export function startAdminServer(deps: AdminServerDeps): { port: number; stop(): Promise<void> } {
  const app = new Elysia()
    .get("/healthz", () => Response.json({ status: "ok" }))
    .get("/readyz", async () =>
      (await deps.ready())
        ? Response.json({ status: "ready" })
        : Response.json({ status: "not_ready" }, { status: 503 }),
    )
    .get("/metrics", async () => {
      if (!deps.metrics) return new Response("", { status: 404 });
      const { contentType, body } = await deps.metrics();
      return new Response(body, { headers: { "content-type": contentType } });
    });
  listenOrExplain(
    () =>
      app.listen({ hostname: deps.host, port: deps.port, reusePort: false, development: false }),
    `${deps.host}:${deps.port} (admin.host / admin.port)`,
  );
  const port = app.server?.port ?? 0;
  deps.logger.info({ port }, "admin server listening");
  return {
    port,
    stop: async () => {
      await app.stop(false);
    },
  };
}

import { listenOrExplain } from "../../shared/http/index.ts";
import type { Logger } from "../../shared/log/index.ts";

export interface MonitoringServerDeps {
  readonly host: string;
  readonly port: number;
  readonly ready: () => Promise<boolean>;
  readonly metrics?: () => Promise<{ contentType: string; body: string }>;
  readonly logger: Logger;
}

type Handler = () => Promise<Response> | Response;

/**
 * /healthz, /readyz and /metrics on the monitoring port of every service. The ingress's API port
 * does not serve /metrics: keep the monitoring port out of the Service and Ingress that callers reach.
 * Three fixed GETs need no router: plain Bun.serve keeps Elysia out of the processes that serve
 * no API (about 12 MB of RSS in a projector, executor or callback process).
 */
export function startMonitoringServer(deps: MonitoringServerDeps): {
  port: number;
  stop(): Promise<void>;
} {
  const routes: Record<string, Handler> = {
    "/healthz": () => Response.json({ status: "ok" }),
    "/readyz": async () =>
      (await deps.ready())
        ? Response.json({ status: "ready" })
        : Response.json({ status: "not_ready" }, { status: 503 }),
    "/metrics": async () => {
      if (!deps.metrics) return new Response("", { status: 404 });
      const { contentType, body } = await deps.metrics();
      return new Response(body, { headers: { "content-type": contentType } });
    },
  };
  let server: ReturnType<typeof Bun.serve> | undefined;
  listenOrExplain(() => {
    server = Bun.serve({
      hostname: deps.host,
      port: deps.port,
      reusePort: false,
      development: false,
      fetch(request) {
        const handler = routes[new URL(request.url).pathname];
        if (!handler) return Response.json({ status: "not_found" }, { status: 404 });
        if (request.method !== "GET" && request.method !== "HEAD") {
          return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
        }
        return handler();
      },
      error(err) {
        deps.logger.error({ err }, "monitoring server request failed");
        return Response.json({ status: "error" }, { status: 500 });
      },
    });
  }, `${deps.host}:${deps.port} (monitoring.host / monitoring.port)`);
  const port = server?.port ?? 0;
  deps.logger.info({ port }, "monitoring server listening");
  return {
    port,
    stop: async () => {
      await server?.stop(false);
    },
  };
}

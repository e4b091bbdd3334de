import { describe, expect, test } from "bun:test";
import { readStream } from "../../shared/bus/stream-reader.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startHub } from "../helpers/hub.ts";
import { traceparentRecorders } from "../helpers/otlp.ts";
import { waitFor } from "../helpers/wait.ts";

const TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TOKEN = "trace-token-0123456789abcdef";

describe("W3C trace context", () => {
  test("POST /run's traceparent reaches every event, the executor task, the callback and the logs", async () => {
    const { seen, executor, receiver, stop } = traceparentRecorders({ ok: true });
    try {
      await using hub = await startHub({
        clients: [
          {
            id: "tracer",
            token: TOKEN,
            routes: ["traced.*"],
            callbackSecrets: [generateWebhookSecret()],
          },
        ],
        yaml: `
callbacks: { allow_cidrs: ["127.0.0.1/32"], timeout: 2s }
routes:
  - key: traced.http
    executor:
      kind: http
      url: http://127.0.0.1:${executor.port}/task
      secret: ${generateWebhookSecret()}
`,
      });
      const res = await hub.run(
        {
          request_id: "t-1",
          route: "traced.http",
          input: "x",
          callback_url: `http://127.0.0.1:${receiver.port}/cb`,
        },
        TOKEN,
        { traceparent: TRACE },
      );
      expect(res.status).toBe(202);
      expect(res.headers.get("traceparent")).toBe(TRACE);
      const { job_id } = (await res.json()) as { job_id: string };
      await waitFor("the callback", () => seen.callback !== "", { timeoutMs: 15_000 });
      expect(seen.task).toBe(TRACE);
      expect(seen.callback).toBe(TRACE);
      await waitFor("callback.delivered", async () => {
        const r = await hub.request(`/jobs/${job_id}`, { token: TOKEN });
        return (
          ((await r.json()) as { callback?: { status: string } }).callback?.status === "delivered"
        );
      });
      const headers: Record<string, string>[] = [];
      for await (const record of readStream(hub.running.hub.js, {
        filterSubject: `sy.evt.tracer.${job_id}.*`,
      })) {
        headers.push(record.headers);
      }
      // The lean path: run.requested, job.done, callback.delivered — each carries the trace.
      expect(headers.length).toBe(3);
      for (const h of headers) expect(h.traceparent).toBe(TRACE);
      const traceId = TRACE.split("-")[1] as string;
      const lines = hub
        .logs()
        .split("\n")
        .filter((l) => l.includes(job_id));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toContain(`"trace_id":"${traceId}"`);
    } finally {
      stop();
    }
  });
});

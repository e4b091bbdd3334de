import { afterAll, describe, expect, test } from "bun:test";
import { type AddressInfo, createServer } from "node:net";
import {
  classifyNetworkError,
  createEgressChecker,
  type DeliverOptions,
  deliverWebhook,
  parseCidrList,
  type Resolver,
} from "../../shared/net/index.ts";
import {
  generateWebhookSecret,
  verifyWebhook,
  webhookHeaders,
} from "../../shared/webhooks/index.ts";
import { startReceiver } from "./servers.ts";

const LOOPBACK = parseCidrList(["127.0.0.0/8"]);
const secret = generateWebhookSecret();
const body = JSON.stringify({ type: "job.completed", data: { job_id: "j1", status: "done" } });
const headers = webhookHeaders({
  id: "msg_deliver",
  timestamp: Math.floor(Date.now() / 1000),
  body,
  secrets: [secret],
});

const never = new Promise<Response>(() => {});
const receiver = startReceiver((_req, path) => {
  switch (path) {
    case "/ok":
      return new Response("thanks", { status: 200 });
    case "/accepted":
      return new Response(null, { status: 204 });
    case "/fail":
      return new Response("boom", { status: 500 });
    case "/gone":
      return new Response("bye", { status: 410 });
    case "/busy":
      return new Response(null, { status: 503, headers: { "retry-after": "7" } });
    case "/busy-date":
      return new Response(null, {
        status: 429,
        headers: { "retry-after": "Wed, 21 Oct 2015 07:28:30 GMT" },
      });
    case "/redirect":
      return new Response(null, { status: 302, headers: { location: target.url("/target") } });
    case "/hang":
      return never;
    case "/stall-body":
      // 200 and its headers at once, then a body that never ends.
      return new Response(
        new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode("ok"));
          },
          pull: () => new Promise(() => {}),
        }),
      );
    case "/small-body":
      return new Response("x".repeat(60 * 1024), { status: 200 });
    case "/huge":
      // 64 MiB stream; the deliverer must stop reading long before the end.
      return new Response(
        new ReadableStream({
          pull(controller) {
            controller.enqueue(new Uint8Array(64 * 1024));
          },
        }),
      );
    default:
      return new Response("not found", { status: 404 });
  }
});
const target = startReceiver(() => new Response("should not be reached"));

afterAll(async () => {
  await receiver.stop();
  await target.stop();
});

const deliver = (path: string, extra: Partial<DeliverOptions> = {}) =>
  deliverWebhook({ url: receiver.url(path), body, headers, allowCidrs: LOOPBACK, ...extra });

const countPath = (path: string) => receiver.received.filter((r) => r.path === path).length;

describe("deliverWebhook", () => {
  test("2xx is success and the receiver can verify the request", async () => {
    const attempt = await deliver("/ok");
    expect(attempt).toMatchObject({ ok: true, status: 200, gone: false, address: "127.0.0.1" });
    expect(attempt.errorClass).toBeUndefined();
    const got = receiver.received.find((r) => r.path === "/ok");
    expect(got?.body).toBe(body);
    expect(got?.headers.get("user-agent")).toBe("Switchyard");
    expect(got?.headers.get("content-type")).toBe("application/json");
    expect(() =>
      verifyWebhook(got?.body ?? "", got?.headers ?? new Headers(), [secret]),
    ).not.toThrow();
    expect((await deliver("/accepted")).ok).toBe(true);
  });

  test("500 is an http_status failure", async () => {
    expect(await deliver("/fail")).toMatchObject({
      ok: false,
      status: 500,
      errorClass: "http_status",
      gone: false,
    });
  });

  test("410 is reported as gone", async () => {
    expect(await deliver("/gone")).toMatchObject({
      ok: false,
      status: 410,
      errorClass: "http_status",
      gone: true,
    });
  });

  test("Retry-After in seconds and as an HTTP date is reported", async () => {
    expect(await deliver("/busy")).toMatchObject({ ok: false, status: 503, retryAfterSec: 7 });
    const clock = () => Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");
    expect(await deliver("/busy-date", { clock })).toMatchObject({
      status: 429,
      retryAfterSec: 30,
    });
    expect((await deliver("/fail")).retryAfterSec).toBeUndefined();
  });

  test("a 302 is a redirect failure and its target is never contacted", async () => {
    const attempt = await deliver("/redirect");
    expect(attempt).toMatchObject({ ok: false, status: 302, errorClass: "redirect" });
    expect(countPath("/redirect")).toBe(1);
    expect(target.received).toHaveLength(0);
  });

  test("a hanging receiver ends in a timeout within the budget", async () => {
    const started = performance.now();
    const attempt = await deliver("/hang", { timeoutMs: 300 });
    expect(attempt).toMatchObject({ ok: false, errorClass: "timeout" });
    expect(attempt.status).toBeUndefined();
    expect(attempt.durationMs).toBeGreaterThanOrEqual(250);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  test("a huge response body is not read to the end: response_too_large, not delivered", async () => {
    const started = Date.now();
    const attempt = await deliver("/huge", { maxResponseBytes: 1024, timeoutMs: 5_000 });
    expect(attempt).toMatchObject({ ok: false, status: 200, errorClass: "response_too_large" });
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  test("a body under the default cap (64 KiB) is read to the end and delivers", async () => {
    expect(await deliver("/small-body")).toMatchObject({ ok: true, status: 200 });
  });

  test("a 2xx whose body stalls is a timeout at the attempt's deadline, not a delivery", async () => {
    const started = Date.now();
    const attempt = await deliver("/stall-body", { timeoutMs: 400 });
    expect(attempt).toMatchObject({ ok: false, errorClass: "timeout" });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  test("a receiver that closes mid-body is a network failure", async () => {
    const raw = createServer((socket) => {
      socket.once("data", () => {
        socket.end("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial");
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = raw.address() as AddressInfo;
      const attempt = await deliverWebhook({
        url: `http://127.0.0.1:${port}/cut`,
        body,
        headers,
        allowCidrs: LOOPBACK,
        timeoutMs: 3_000,
      });
      expect(attempt).toMatchObject({ ok: false, errorClass: "network" });
    } finally {
      raw.close();
    }
  });

  test("a refused connection is a network failure", async () => {
    const closed = startReceiver(() => new Response("x"));
    const url = closed.url("/ok");
    await closed.stop();
    expect(await deliverWebhook({ url, body, headers, allowCidrs: LOOPBACK })).toMatchObject({
      ok: false,
      errorClass: "network",
    });
  });
});

describe("deliverWebhook egress checks", () => {
  // First answer 127.0.0.1, later answers something else: pinning means only one lookup happens.
  const rebinding = () => {
    let calls = 0;
    const resolver: Resolver = async () => {
      calls += 1;
      return [{ address: calls === 1 ? "127.0.0.1" : "10.9.9.9", family: 4 }];
    };
    return { resolver, calls: () => calls };
  };

  test("a literal loopback URL is refused without the allowlist and nothing is sent", async () => {
    const before = countPath("/ok");
    const attempt = await deliverWebhook({ url: receiver.url("/ok"), body, headers });
    expect(attempt).toMatchObject({ ok: false, errorClass: "ssrf_blocked", rule: "loopback" });
    expect(countPath("/ok")).toBe(before);
  });

  test("a hostname resolving to 127.0.0.1 is refused unless 127.0.0.0/8 is allowlisted", async () => {
    const url = `http://rebind.test:${receiver.server.port}/ok`;
    // "rebind.test" does not exist in real DNS: reaching the server proves the pinned lookup was used.
    const before = countPath("/ok");
    const refused = await deliverWebhook({ url, body, headers, resolver: rebinding().resolver });
    expect(refused).toMatchObject({ ok: false, errorClass: "ssrf_blocked", rule: "loopback" });
    expect(refused.message).toBe("callback_url resolves to a loopback address (loopback)");
    expect(countPath("/ok")).toBe(before);

    const { resolver, calls } = rebinding();
    const allowed = await deliverWebhook({ url, body, headers, resolver, allowCidrs: LOOPBACK });
    expect(allowed).toMatchObject({ ok: true, status: 200, address: "127.0.0.1" });
    expect(calls()).toBe(1);
    // Connected to the pinned IP, while Host still names the original host.
    expect(receiver.received.at(-1)?.headers.get("host")).toBe(
      `rebind.test:${receiver.server.port}`,
    );
  });

  test("with a remembered checker every attempt still resolves, and a name now private is refused", async () => {
    // One checker for all attempts, as the callback service holds it; the name's answer moves
    // from an allowed address to a private one between attempts.
    const checker = createEgressChecker({ allowCidrs: LOOPBACK });
    const url = `http://rebind.test:${receiver.server.port}/ok`;
    const { resolver, calls } = rebinding();
    const before = countPath("/ok");
    const first = await deliverWebhook({ url, body, headers, resolver, checker });
    expect(first).toMatchObject({ ok: true, status: 200, address: "127.0.0.1" });
    const second = await deliverWebhook({ url, body, headers, resolver, checker });
    expect(second).toMatchObject({ ok: false, errorClass: "ssrf_blocked", rule: "rfc1918" });
    expect(calls()).toBe(2);
    expect(countPath("/ok")).toBe(before + 1);
    // The checker's policy is the one applied, whatever the options say.
    const strict = createEgressChecker({});
    const refused = await deliverWebhook({
      url: receiver.url("/ok"),
      body,
      headers,
      allowCidrs: LOOPBACK,
      checker: strict,
    });
    expect(refused).toMatchObject({ ok: false, errorClass: "ssrf_blocked", rule: "loopback" });
    expect(countPath("/ok")).toBe(before + 1);
  });

  test("private, metadata and malformed URLs are refused before any lookup", async () => {
    const { resolver, calls } = rebinding();
    for (const [url, rule] of [
      ["http://10.0.0.1/cb", "rfc1918"],
      ["http://169.254.169.254/latest", "cloud_metadata"],
      ["http://metadata.google.internal/", "cloud_metadata"],
      ["ftp://example.com/", "unsupported_scheme"],
      ["https://u:p@example.com/", "userinfo"],
    ] as const) {
      expect(await deliverWebhook({ url, body, headers, resolver })).toMatchObject({
        ok: false,
        errorClass: "ssrf_blocked",
        rule,
      });
    }
    expect(calls()).toBe(0);
  });

  test("DNS failure is a dns error; a stuck resolver is a timeout", async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error("nope"), { code: "ENOTFOUND" });
    };
    expect(
      await deliverWebhook({ url: "http://nx.test/", body, headers, resolver: failing }),
    ).toMatchObject({ ok: false, errorClass: "dns" });
    const stuck: Resolver = () => new Promise(() => {});
    expect(
      await deliverWebhook({
        url: "http://slow.test/",
        body,
        headers,
        resolver: stuck,
        timeoutMs: 100,
      }),
    ).toMatchObject({ ok: false, errorClass: "timeout" });
  });

  test("error codes map to classes", () => {
    expect(classifyNetworkError("ECONNREFUSED")).toBe("network");
    expect(classifyNetworkError("ECONNRESET")).toBe("network");
    expect(classifyNetworkError("ETIMEDOUT")).toBe("timeout");
    expect(classifyNetworkError("EAI_AGAIN")).toBe("dns");
    expect(classifyNetworkError("ERR_TLS_CERT_ALTNAME_INVALID")).toBe("tls");
    expect(classifyNetworkError("DEPTH_ZERO_SELF_SIGNED_CERT")).toBe("tls");
    expect(classifyNetworkError("CERT_HAS_EXPIRED")).toBe("tls");
    expect(classifyNetworkError(undefined)).toBe("network");
  });
});

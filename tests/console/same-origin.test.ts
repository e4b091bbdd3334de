import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "../admin/operator-hub.ts";

// A console request carrying the session cookie and its CSRF token (or a login) is accepted only
// from the console's own origin: every one of Sec-Fetch-Site, Origin and (where Origin is absent)
// Referer that is present must say so. With none of the three it is not from a browser and passes
// (docs/security.md, "The console").

let op: OperatorHub;
let own: string;
let slowJob: string;

beforeAll(async () => {
  op = await startOperatorHub();
  own = op.hub.baseUrl;
  const res = await op.hub.run(
    { request_id: "origin-slow", route: "demo.slow", input: "x" },
    CLIENT_TOKENS.acme,
  );
  expect(res.status).toBe(202);
  slowJob = ((await res.json()) as { job_id: string }).job_id;
});
afterAll(() => op?.stop());

type Headers = Record<string, string>;
const EVIL = "http://evil.example";

/** Each combination of the three headers, and whether it is the console's own origin. */
function combinations(): { name: string; headers: Headers; accepted: boolean }[] {
  const otherPort = new URL(own);
  otherPort.port = String(Number(otherPort.port) + 1);
  return [
    { name: "Origin evil, no Sec-Fetch-Site", headers: { origin: EVIL }, accepted: false },
    { name: "Origin null", headers: { origin: "null" }, accepted: false },
    { name: "Origin on another port", headers: { origin: otherPort.origin }, accepted: false },
    {
      // A proxy in front that ends TLS and passes Host through: the browser's origin is https.
      name: "Origin https of the same host and port",
      headers: { origin: own.replace("http:", "https:") },
      accepted: true,
    },
    { name: "Origin not a URL", headers: { origin: "evil" }, accepted: false },
    { name: "Origin own", headers: { origin: own }, accepted: true },
    {
      name: "Sec-Fetch-Site same-origin, Origin evil",
      headers: { "sec-fetch-site": "same-origin", origin: EVIL },
      accepted: false,
    },
    {
      name: "Sec-Fetch-Site cross-site",
      headers: { "sec-fetch-site": "cross-site" },
      accepted: false,
    },
    {
      name: "Sec-Fetch-Site same-site, Origin own",
      headers: { "sec-fetch-site": "same-site", origin: own },
      accepted: false,
    },
    {
      name: "Sec-Fetch-Site same-origin, Origin own",
      headers: { "sec-fetch-site": "same-origin", origin: own },
      accepted: true,
    },
    { name: "no Origin, Referer evil", headers: { referer: `${EVIL}/console/` }, accepted: false },
    { name: "no Origin, Referer own", headers: { referer: `${own}/console/` }, accepted: true },
    {
      name: "Origin own, Referer evil (Origin decides)",
      headers: { origin: own, referer: `${EVIL}/` },
      accepted: true,
    },
    { name: "none of the three", headers: {}, accepted: true },
  ];
}

async function login(headers: Headers): Promise<Response> {
  return fetch(`${own}/console/login`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ token: OPERATOR_TOKENS.olga }),
  });
}

async function session(): Promise<{ cookie: string; csrf: string }> {
  const res = await login({});
  expect(res.status).toBe(204);
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const state = await fetch(`${own}/console/state`, { headers: { cookie } });
  return { cookie, csrf: ((await state.json()) as { csrf_token: string }).csrf_token };
}

async function verdict(res: Response): Promise<"accepted" | string> {
  if (res.status === 403) return `refused: ${((await res.json()) as { code: string }).code}`;
  return res.ok ? "accepted" : `status ${res.status}`;
}

describe("console requests from another origin", () => {
  test("a cancel with the cookie and CSRF token: each header combination", async () => {
    const { cookie, csrf } = await session();
    const results: Record<string, string> = {};
    const expected: Record<string, string> = {};
    for (const { name, headers, accepted } of combinations()) {
      const res = await fetch(`${own}/admin/v1/jobs/${slowJob}/cancel`, {
        method: "POST",
        headers: { cookie, "x-csrf-token": csrf, ...headers },
      });
      results[name] = await verdict(res);
      expected[name] = accepted ? "accepted" : "refused: csrf_failed";
    }
    expect(results).toEqual(expected);
  });

  test("a login: each header combination", async () => {
    const results: Record<string, string> = {};
    const expected: Record<string, string> = {};
    for (const { name, headers, accepted } of combinations()) {
      results[name] = await verdict(await login(headers));
      expected[name] = accepted ? "accepted" : "refused: csrf_failed";
    }
    expect(results).toEqual(expected);
  });

  test("a logout with the cookie: refused from another origin, so the session lives on", async () => {
    const { cookie, csrf } = await session();
    const logout = await fetch(`${own}/console/logout`, {
      method: "POST",
      headers: { cookie, "x-csrf-token": csrf, origin: EVIL },
    });
    expect(await verdict(logout)).toBe("refused: csrf_failed");
    const state = await fetch(`${own}/console/state`, { headers: { cookie } });
    expect(((await state.json()) as { operator: { id: string } | null }).operator?.id).toBe("olga");
  });

  test("a bearer token carries no ambient credential: its Origin is not checked", async () => {
    const res = await op.admin(`/jobs/${slowJob}/cancel`, OPERATOR_TOKENS.olga, {
      method: "POST",
      headers: { origin: EVIL },
    });
    expect(await verdict(res)).toBe("accepted");
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { clientAddress, createAuthFailureLimiter } from "../../services/ingress/auth-limit.ts";
import { manualClock } from "../../shared/clock/index.ts";
import { type SecurityHub, startSecurityHub } from "./hub.ts";
import { expectProblem } from "./problem.ts";

const GOOD = { id: "acme", token: "acme-token-0123456789abcdef" };
const BUDGET = 5;

describe("auth failure limiter (unit, manual clock)", () => {
  test("N failures per minute, then a wait; refills over the minute; per address", () => {
    const clock = manualClock("2030-01-01T00:00:00Z");
    const limiter = createAuthFailureLimiter(clock, 6);
    for (let i = 0; i < 6; i++) {
      expect(limiter.blockedFor("198.51.100.1")).toBe(0);
      // Nobody is blocked yet: the ingress need not look up the request's address.
      expect(limiter.mayBlock()).toBe(false);
      limiter.failed("198.51.100.1");
    }
    expect(limiter.mayBlock()).toBe(true);
    expect(limiter.blockedFor("198.51.100.1")).toBe(10);
    expect(limiter.blockedFor("198.51.100.2")).toBe(0);
    clock.advance(10_000);
    expect(limiter.blockedFor("198.51.100.1")).toBe(0);
    expect(limiter.mayBlock()).toBe(false);
  });

  test("a flood of other addresses evicts the oldest entries, not the busiest", () => {
    const clock = manualClock("2030-01-01T00:00:00Z");
    const limiter = createAuthFailureLimiter(clock, 1, 3);
    limiter.failed("a");
    limiter.failed("b");
    limiter.failed("c");
    limiter.failed("a"); // a is now the most recent
    limiter.failed("d"); // evicts b
    expect(limiter.blockedFor("a")).toBeGreaterThan(0);
    expect(limiter.blockedFor("b")).toBe(0);
    expect(limiter.blockedFor("d")).toBeGreaterThan(0);
  });

  test("X-Forwarded-For is used only as far as trust_proxy_hops says", () => {
    const peer = { address: "10.0.0.9" };
    const req = (xff?: string) =>
      new Request("http://h/", xff === undefined ? {} : { headers: { "x-forwarded-for": xff } });
    expect(clientAddress(req("1.1.1.1"), peer, 0)).toBe("10.0.0.9");
    // The client forged "6.6.6.6"; the proxy appended the address it really saw.
    expect(clientAddress(req("6.6.6.6, 203.0.113.5"), peer, 1)).toBe("203.0.113.5");
    expect(clientAddress(req("6.6.6.6, 203.0.113.5, 10.0.0.2"), peer, 2)).toBe("203.0.113.5");
    expect(clientAddress(req(), peer, 1)).toBe("10.0.0.9");
    expect(clientAddress(req("203.0.113.5"), peer, 3)).toBe("10.0.0.9");
    expect(clientAddress(req(), null, 0)).toBe("unknown");
  });
});

describe("failed authentication is limited per source address (real hub)", () => {
  let direct: SecurityHub;
  let proxied: SecurityHub;
  beforeAll(async () => {
    [direct, proxied] = await Promise.all([
      startSecurityHub({ clients: [GOOD], server: { auth_failures_per_minute: BUDGET } }),
      startSecurityHub({
        clients: [GOOD],
        server: { auth_failures_per_minute: BUDGET, trust_proxy_hops: 1 },
      }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([direct?.stop(), proxied?.stop()]);
  });

  const get = (hub: SecurityHub, token: string | null, headers: Record<string, string> = {}) =>
    fetch(`${hub.baseUrl}/jobs/job_AAAAAAAAAAAAAAAAAAAAAA`, {
      headers: token === null ? headers : { ...headers, authorization: `Bearer ${token}` },
    });

  test("successes are not counted; the (N+1)-th failure answers 429 before the token is read", async () => {
    for (let i = 0; i < BUDGET - 1; i++) {
      await expectProblem(await get(direct, `wrong-${i}`), 401, "unauthorized");
    }
    // Many successful requests in between do not use up the failure budget.
    for (let i = 0; i < 3 * BUDGET; i++) {
      await expectProblem(await get(direct, GOOD.token), 404, "job_not_found");
    }
    await expectProblem(await get(direct, null), 401, "unauthorized");
    const limited = await get(direct, "wrong-again");
    await expectProblem(limited, 429, "rate_limited");
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    // Refused before the token is checked: even a valid token from this address waits.
    await expectProblem(await get(direct, GOOD.token), 429, "rate_limited");
    // The failure limit is about authentication; the POST path shares it.
    const post = await fetch(`${direct.baseUrl}/run`, {
      method: "POST",
      headers: { authorization: "Bearer nope", "content-type": "application/json" },
      body: "{}",
    });
    await expectProblem(post, 429, "rate_limited");
  });

  test("behind a trusted proxy each forwarded address has its own budget; forged entries do not help", async () => {
    const attacker = (forged: string) => ({ "x-forwarded-for": `${forged}, 203.0.113.66` });
    for (let i = 0; i < BUDGET; i++) {
      await expectProblem(await get(proxied, "bad", attacker(`6.6.6.${i}`)), 401, "unauthorized");
    }
    await expectProblem(await get(proxied, "bad", attacker("7.7.7.7")), 429, "rate_limited");
    // Another client behind the same proxy (the same TCP peer) is not affected.
    const other = { "x-forwarded-for": "203.0.113.77" };
    await expectProblem(await get(proxied, GOOD.token, other), 404, "job_not_found");
    await expectProblem(await get(proxied, "bad", other), 401, "unauthorized");
  });
});

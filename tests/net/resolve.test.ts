import { describe, expect, test } from "bun:test";
import {
  parseCidrList,
  type ResolvedAddress,
  type Resolver,
  resolveAndCheck,
} from "../../shared/net/index.ts";

function fakeResolver(table: Record<string, ResolvedAddress[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = async (hostname: string) => {
    calls.push(hostname);
    const answer = table[hostname];
    if (!answer)
      throw Object.assign(new Error(`queryA ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return answer;
  };
  return Object.assign(resolver, { calls });
}

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });

describe("resolveAndCheck (delivery time)", () => {
  const resolver = fakeResolver({
    "rebind.test": [v4("127.0.0.1")],
    "public.test": [v4("93.184.216.34"), { address: "2606:2800:220:1::1", family: 6 }],
    "mixed.test": [v4("93.184.216.34"), v4("10.0.0.5")],
    "mapped.test": [{ address: "::ffff:169.254.169.254", family: 6 }],
    "empty.test": [],
  });

  test("returns the first address when every answer is public", async () => {
    expect(await resolveAndCheck("public.test", { resolver })).toEqual({
      ok: true,
      address: "93.184.216.34",
      family: 4,
    });
  });

  test("a name resolving to loopback is refused unless 127.0.0.0/8 is allowlisted", async () => {
    expect(await resolveAndCheck("rebind.test", { resolver })).toMatchObject({
      ok: false,
      errorClass: "ssrf_blocked",
      rule: "loopback",
    });
    const allowCidrs = parseCidrList(["127.0.0.0/8"]);
    expect(await resolveAndCheck("rebind.test", { resolver, allowCidrs })).toEqual({
      ok: true,
      address: "127.0.0.1",
      family: 4,
    });
  });

  test("one bad answer among good ones refuses the whole name", async () => {
    expect(await resolveAndCheck("mixed.test", { resolver })).toMatchObject({ rule: "rfc1918" });
  });

  test("mapped IPv6 answers are judged by their IPv4", async () => {
    expect(await resolveAndCheck("mapped.test", { resolver })).toMatchObject({
      rule: "cloud_metadata",
    });
  });

  test("DNS failures and empty answers are dns errors without the raw message", async () => {
    const missing = await resolveAndCheck("missing.test", { resolver });
    expect(missing).toEqual({
      ok: false,
      errorClass: "dns",
      message: "DNS lookup failed (ENOTFOUND)",
    });
    expect(await resolveAndCheck("empty.test", { resolver })).toMatchObject({ errorClass: "dns" });
  });

  test("literals and blocked names are decided without asking the resolver", async () => {
    resolver.calls.length = 0;
    expect(await resolveAndCheck("[::1]", { resolver })).toMatchObject({ rule: "loopback" });
    expect(await resolveAndCheck("8.8.8.8", { resolver })).toMatchObject({
      ok: true,
      address: "8.8.8.8",
    });
    expect(await resolveAndCheck("metadata.google.internal", { resolver })).toMatchObject({
      rule: "cloud_metadata",
    });
    expect(resolver.calls).toEqual([]);
  });
});

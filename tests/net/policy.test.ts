import { describe, expect, test } from "bun:test";
import { checkAddress, checkCallbackUrl, parseCidrList } from "../../shared/net/index.ts";

const ruleOf = (url: string, policy = {}) => {
  const result = checkCallbackUrl(url, policy);
  return result.ok ? null : result.rule;
};

describe("checkCallbackUrl (submit time)", () => {
  test("accepts absolute http and https URLs with public or unresolved hosts", () => {
    for (const url of [
      "https://hooks.example.com/switchyard?x=1",
      "http://8.8.8.8:8080/cb",
      "https://[2606:4700:4700::1111]/cb",
      "https://rebind.test/",
    ]) {
      const result = checkCallbackUrl(url);
      expect(result.ok).toBe(true);
    }
  });

  test.each([
    ["/relative/path", "invalid_url"],
    ["not a url", "invalid_url"],
    ["ftp://example.com/x", "unsupported_scheme"],
    ["file:///etc/passwd", "unsupported_scheme"],
    ["javascript:alert(1)", "unsupported_scheme"],
    ["https://user:pass@example.com/", "userinfo"],
    ["https://user@example.com/", "userinfo"],
    [`https://example.com/${"a".repeat(2100)}`, "invalid_url"],
    ["http://127.0.0.1/", "loopback"],
    ["http://127.1/", "loopback"],
    ["http://2130706433/", "loopback"],
    ["http://0x7f.0.0.1/", "loopback"],
    ["http://[::1]:8080/", "loopback"],
    ["http://[::ffff:127.0.0.1]/", "loopback"],
    ["http://[::ffff:a00:1]/", "rfc1918"],
    ["http://10.0.0.1/", "rfc1918"],
    ["http://192.168.1.10:3000/hook", "rfc1918"],
    ["http://172.20.0.5/", "rfc1918"],
    ["http://100.64.1.1/", "cgnat"],
    ["http://169.254.169.254/latest/meta-data/", "cloud_metadata"],
    ["http://[fd00:ec2::254]/", "cloud_metadata"],
    ["http://metadata.google.internal/computeMetadata/v1/", "cloud_metadata"],
    ["http://METADATA.GOOGLE.INTERNAL./", "cloud_metadata"],
    ["http://localhost:8080/", "loopback"],
    ["http://api.localhost/", "loopback"],
    ["http://0.0.0.0/", "this_network"],
    ["http://[fe80::1]/", "link_local"],
    ["http://[fc00::1]/", "unique_local"],
    ["http://224.0.0.1/", "multicast"],
    ["http://198.18.0.1/", "benchmark"],
    ["http://192.0.2.1/", "documentation"],
    ["http://255.255.255.255/", "broadcast"],
  ] as const)("%s is refused as %s", (url, rule) => {
    expect(ruleOf(url)).toBe(rule);
  });

  test("the message names the rule, as the API's 400 detail", () => {
    const result = checkCallbackUrl("http://10.1.2.3/cb");
    expect(result).toEqual({
      ok: false,
      rule: "rfc1918",
      message: "callback_url resolves to a private address (rfc1918)",
    });
  });

  test("the allowlist opens exactly the listed blocks", () => {
    const allowCidrs = parseCidrList("10.20.0.0/16");
    expect(ruleOf("http://10.20.1.1/", { allowCidrs })).toBeNull();
    expect(ruleOf("http://[::ffff:10.20.1.1]/", { allowCidrs })).toBeNull();
    expect(ruleOf("http://10.21.0.1/", { allowCidrs })).toBe("rfc1918");
  });

  test("allowPrivate opens private ranges and localhost but never cloud metadata", () => {
    const policy = { allowPrivate: true };
    expect(ruleOf("http://127.0.0.1:3000/", policy)).toBeNull();
    expect(ruleOf("http://localhost:3000/", policy)).toBeNull();
    expect(ruleOf("http://169.254.169.254/", policy)).toBe("cloud_metadata");
    expect(ruleOf("http://metadata.google.internal/", policy)).toBe("cloud_metadata");
    expect(ruleOf("http://169.254.169.254/", { allowCidrs: parseCidrList("169.254.0.0/16") })).toBe(
      "cloud_metadata",
    );
  });

  test("checkAddress refuses non-IP text", () => {
    expect(checkAddress("example.com")?.rule).toBe("invalid_address");
    expect(checkAddress("8.8.8.8")).toBeNull();
  });
});

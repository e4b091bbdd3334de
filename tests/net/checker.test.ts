import { describe, expect, test } from "bun:test";
import {
  checkAddress,
  checkCallbackUrl,
  createEgressChecker,
  parseCidrList,
} from "../../shared/net/index.ts";

const URLS = [
  "http://127.0.0.1:8080/cb",
  "https://hooks.example.com/x?y=1",
  "http://10.0.0.1/cb",
  "http://169.254.169.254/latest",
  "http://[::ffff:10.0.0.1]/",
  "http://localhost/",
  "ftp://example.com/",
  "not a url",
];
const ADDRESSES = ["127.0.0.1", "10.1.2.3", "8.8.8.8", "169.254.169.254", "::1", "fd00::1", "x"];

describe("createEgressChecker", () => {
  for (const [name, policy] of [
    ["no allowlist", {}],
    ["127.0.0.0/8 allowed", { allowCidrs: parseCidrList(["127.0.0.0/8"]) }],
    ["private allowed", { allowPrivate: true }],
  ] as const) {
    test(`gives the checks' own verdicts, first and remembered (${name})`, () => {
      // A bound of 3 makes later rounds both hit and miss what is remembered.
      const checker = createEgressChecker(policy, { maxEntries: 3 });
      for (let round = 0; round < 3; round++) {
        for (const url of URLS) {
          const got = checker.url(url);
          const want = checkCallbackUrl(url, policy);
          expect(got.ok).toBe(want.ok);
          if (got.ok && want.ok) expect(got.url.href).toBe(want.url.href);
          else expect(got).toEqual(want);
        }
        for (const ip of ADDRESSES) expect(checker.address(ip)).toEqual(checkAddress(ip, policy));
      }
    });
  }

  test("tells a literal address from a name, with the verdict on each", () => {
    const checker = createEgressChecker({});
    expect(checker.host("10.0.0.1")).toMatchObject({ kind: "address", family: 4 });
    expect(checker.host("10.0.0.1").refusal?.rule).toBe("rfc1918");
    expect(checker.host("::1")).toMatchObject({ kind: "address", family: 6 });
    expect(checker.host("hooks.example.com")).toEqual({ kind: "name", refusal: null });
    expect(checker.host("metadata.google.internal").refusal?.rule).toBe("cloud_metadata");
  });

  test("keeps the policy it was made with when the caller's list changes later", () => {
    const allowCidrs = [...parseCidrList(["10.0.0.0/8"])];
    const checker = createEgressChecker({ allowCidrs });
    allowCidrs.length = 0;
    expect(checker.address("10.1.2.3")).toBeNull();
  });
});

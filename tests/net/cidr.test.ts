import { describe, expect, test } from "bun:test";
import {
  CidrParseError,
  cidrContains,
  parseCidr,
  parseCidrList,
  parseIp,
} from "../../shared/net/index.ts";

function contains(cidr: string, ip: string): boolean {
  const address = parseIp(ip);
  if (!address) throw new Error(`bad test address ${ip}`);
  return cidrContains(parseCidr(cidr), address);
}

describe("CIDR allowlist parsing", () => {
  test("parses IPv4, IPv6 and bare addresses into canonical blocks", () => {
    expect(
      parseCidrList("10.0.0.0/8, 127.0.0.0/8  fd00::/8,203.0.113.9").map((b) => b.text),
    ).toEqual(["10.0.0.0/8", "127.0.0.0/8", "fd00:0:0:0:0:0:0:0/8", "203.0.113.9/32"]);
    expect(parseCidrList([]).length).toBe(0);
    expect(parseCidrList("").length).toBe(0);
    expect(parseCidr("::1").prefix).toBe(128);
    expect(parseCidr("0.0.0.0/0").prefix).toBe(0);
  });

  test.each([
    ["10.0.0.1/8", /host bits are set; did you mean 10\.0\.0\.0\/8\?/],
    ["10.0.0.0/33", /prefix length must be an integer from 0 to 32 for IPv4/],
    ["fd00::/129", /from 0 to 128 for IPv6/],
    ["10.0.0.0/", /prefix length/],
    ["10.0.0.0/-1", /prefix length/],
    ["10.0.0.0/8/8", /prefix length/],
    ["example.com/24", /"example\.com" is not an IPv4 or IPv6 address/],
    ["10.0.0/8", /not an IPv4 or IPv6 address/],
  ])("%p is refused with a clear reason", (entry, reason) => {
    expect(() => parseCidr(entry)).toThrow(CidrParseError);
    expect(() => parseCidr(entry)).toThrow(reason);
  });

  test("a list names the offending entry", () => {
    try {
      parseCidrList(["10.0.0.0/8", "192.168.1.0/16"]);
      throw new Error("expected a CidrParseError");
    } catch (err) {
      expect(err).toBeInstanceOf(CidrParseError);
      expect((err as CidrParseError).entry).toBe("192.168.1.0/16");
    }
  });

  test("membership at the edges", () => {
    expect(contains("10.0.0.0/8", "10.255.255.255")).toBe(true);
    expect(contains("10.0.0.0/8", "11.0.0.0")).toBe(false);
    expect(contains("0.0.0.0/0", "8.8.8.8")).toBe(true);
    expect(contains("fd00::/8", "fdff::1")).toBe(true);
    expect(contains("fd00::/8", "fe00::")).toBe(false);
    expect(contains("10.0.0.0/8", "::ffff:10.0.0.1")).toBe(false); // families differ here
  });
});

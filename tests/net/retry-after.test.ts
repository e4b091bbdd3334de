import { describe, expect, test } from "bun:test";
import { parseRetryAfter } from "../../shared/net/index.ts";

const NOW = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");

describe("parseRetryAfter", () => {
  test.each([
    ["120", 120],
    [" 0 ", 0],
    ["Wed, 21 Oct 2015 07:28:30 GMT", 30],
    ["Wed, 21 Oct 2015 07:28:00 GMT", 0],
    ["Wed, 21 Oct 2015 07:27:00 GMT", 0],
    ["Wednesday, 21-Oct-15 07:29:00 GMT", 60],
  ] as const)("%p → %p s", (value, seconds) => {
    expect(parseRetryAfter(value, NOW)).toBe(seconds);
  });

  test.each([undefined, null, "", "-1", "1.5", "soon", "12abc", "1e3"])(
    "%p is ignored",
    (value) => {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    },
  );
});

import { describe, expect, test } from "bun:test";
import { parsePartitionList } from "../../bench/lib/partitions.ts";

describe("BENCH_PARTITIONS", () => {
  test("given one count or a comma list, each P is run once in the order given", () => {
    expect(parsePartitionList(undefined)).toBeUndefined();
    expect(parsePartitionList(" ")).toBeUndefined();
    expect(parsePartitionList("8")).toEqual([8]);
    expect(parsePartitionList("1, 8,16,8")).toEqual([1, 8, 16]);
  });

  test("a count outside 1..256 or not a whole number is refused, naming the variable", () => {
    for (const bad of ["0", "257", "1,x", "1.5", "-1", "1,,8"]) {
      expect(() => parsePartitionList(bad)).toThrow(
        "BENCH_PARTITIONS takes partition counts 1..256",
      );
    }
  });
});

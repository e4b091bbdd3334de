/**
 * bench/delivery.ts end to end on a small count: it starts its own nats-server, and prints each
 * settlement's CPU per delivery for the consumer and nats-server; a bad setting stops it with a
 * message naming the key.
 */
import { describe, expect, test } from "bun:test";
import { runToEnd } from "../helpers/run.ts";

const run = (env: Record<string, string>) =>
  runToEnd([process.execPath, "bench/delivery.ts"], { env: { ...process.env, ...env } });

describe("bench/delivery.ts", () => {
  test("prints the consumer's and nats-server's CPU per delivery for each settlement", async () => {
    const { stdout, stderr, code } = await run({ DELIVERY_COUNT: "2000", DELIVERY_ROUNDS: "1" });
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).toContain("(median of 1 rounds of 2000): consumer | nats-server");
    for (const settlement of ["no acks", "an ack per 100 (AckAll)", "an ack per delivery"]) {
      const row = stdout.split("\n").find((line) => line.trim().startsWith(settlement));
      const figures = row?.slice(row.indexOf(settlement) + settlement.length).split("|");
      const [consumer, server] = (figures ?? []).map((f) => Number(f.trim()));
      expect(figures).toHaveLength(2);
      expect(consumer).toBeGreaterThan(0);
      expect(Number.isFinite(server)).toBe(true);
    }
  }, 60_000);

  test("a DELIVERY_COUNT that is not a whole number stops it with a message naming the key", async () => {
    const { stderr, code } = await run({ DELIVERY_COUNT: "many" });
    expect(code).toBe(2);
    expect(stderr).toContain("DELIVERY_COUNT must be a whole number of at least 1; got 'many'");
  });
});

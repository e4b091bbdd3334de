import { describe, expect, test } from "bun:test";
import { lazyChild } from "../../shared/log/index.ts";
import { captureLogger } from "../helpers/logs.ts";

const lines = (text: string) =>
  text
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("a lazily made child logger", () => {
  test("given nothing is logged, its bindings are never built", () => {
    const { logger, logs } = captureLogger();
    let built = 0;
    const log = lazyChild(logger, () => {
      built++;
      return { job_id: "job_1" };
    });
    expect(log.isLevelEnabled("debug")).toBe(false);
    // Reading a level asks the child, so the bindings exist from then on; logging nothing
    // at all (the common path) never builds them.
    expect(built).toBe(1);
    const untouched = lazyChild(logger, () => {
      built++;
      return {};
    });
    expect(untouched).toBeDefined();
    expect(built).toBe(1);
    expect(logs()).toBe("");
  });

  test("when it logs, each line carries the bindings once, and redaction still applies", () => {
    const { logger, logs } = captureLogger();
    let built = 0;
    const log = lazyChild(logger, () => {
      built++;
      return { job_id: "job_2", client_id: "acme" };
    });
    log.warn({ input: "secret task text", attempt: 2 }, "first");
    log.info("second");
    expect(built).toBe(1);
    const [first, second] = lines(logs());
    expect(first).toMatchObject({
      job_id: "job_2",
      client_id: "acme",
      service: "test",
      input: "[redacted]",
      attempt: 2,
      msg: "first",
      level: 40,
    });
    expect(second).toMatchObject({ job_id: "job_2", msg: "second" });
  });

  test("below its level it writes nothing, as the logger it wraps", () => {
    const { logger, logs } = captureLogger("warn");
    lazyChild(logger, () => ({ job_id: "job_3" })).info("dropped");
    expect(logs()).toBe("");
  });
});

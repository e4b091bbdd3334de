import { describe, expect, test } from "bun:test";
import { waitUnread } from "../../services/executor/index.ts";

const acceptedAt = 1_000_000;

describe("waitUnread (the watchdog's first look)", () => {
  test("a run seen within a second of acceptance waits without a status read", () => {
    expect(
      waitUnread({ deliveryCount: 1, acceptedAt, dueAt: acceptedAt + 60_000, now: acceptedAt + 5 }),
    ).toBe(59_995);
  });

  test("a later delivery, an older run or a due job is read", () => {
    const dueAt = acceptedAt + 60_000;
    expect(
      waitUnread({ deliveryCount: 2, acceptedAt, dueAt, now: acceptedAt + 5 }),
    ).toBeUndefined();
    expect(
      waitUnread({ deliveryCount: 1, acceptedAt, dueAt, now: acceptedAt + 1_000 }),
    ).toBeUndefined();
    expect(
      waitUnread({ deliveryCount: 1, acceptedAt, dueAt: acceptedAt + 5, now: acceptedAt + 5 }),
    ).toBeUndefined();
  });
});

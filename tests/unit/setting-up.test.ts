/**
 * retryWhileSettingUp: a start-up write that meets a stream another process is still setting up
 * ("no responders" from nats-server 2.9.10) is tried again; anything else is thrown at once.
 */
import { describe, expect, test } from "bun:test";
import { NoRespondersError, RequestError } from "@nats-io/transport-node";
import { isNoResponders, retryWhileSettingUp } from "../../shared/bus/index.ts";

/** What a JetStream publish throws when no stream listens on the subject (pub-ack-mux.ts). */
const noResponders = () =>
  new RequestError("no responders", { cause: new NoRespondersError("$KV.sy_meta.store_version") });

describe("retryWhileSettingUp", () => {
  test("no responders twice, then the stream listens: the write's result, after three calls", async () => {
    let calls = 0;
    const result = await retryWhileSettingUp(async () => {
      calls++;
      if (calls < 3) throw noResponders();
      return 7;
    });
    expect(result).toBe(7);
    expect(calls).toBe(3);
  });

  test("any other failure is thrown at once", async () => {
    let calls = 0;
    const refused = new Error("permissions violation");
    await expect(
      retryWhileSettingUp(async () => {
        calls++;
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(calls).toBe(1);
  });

  test("a subject no stream ever takes fails after four attempts with the no-responders error", async () => {
    let calls = 0;
    const failure = retryWhileSettingUp(async () => {
      calls++;
      throw noResponders();
    });
    await expect(failure).rejects.toBeInstanceOf(RequestError);
    expect(calls).toBe(4);
  });

  test("isNoResponders looks through the causes, and only for NoRespondersError", () => {
    expect(isNoResponders(noResponders())).toBe(true);
    expect(isNoResponders(new Error("outer", { cause: noResponders() }))).toBe(true);
    expect(isNoResponders(new RequestError("timeout"))).toBe(false);
    expect(isNoResponders("no responders")).toBe(false);
  });
});

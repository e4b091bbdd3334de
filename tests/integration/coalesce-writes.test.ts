import { describe, expect, test } from "bun:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { coalesceWrites } from "../../shared/nats/index.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

describe("coalesceWrites", () => {
  test("a coalesced connection keeps publish order, answers requests and survives a restart", async () => {
    await using nats = await startNats();
    const nc = await connect({
      servers: nats.url,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 100,
    });
    try {
      expect(coalesceWrites(nc)).toBe(true);
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "COALESCE", subjects: ["co.>"] });
      const js = jetstream(nc);
      // Many publishes issued in one turn go out in one write, in order.
      const acks = await Promise.all(
        Array.from({ length: 500 }, (_, i) =>
          js.publish("co.order", String(i), { msgID: `m${i}` }),
        ),
      );
      expect(acks.map((a) => a.seq)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
      const last = await jsm.streams.getMessage("COALESCE", { last_by_subj: "co.order" });
      expect(last?.string()).toBe("499");

      // Core request/reply and flush still work.
      const sub = nc.subscribe("echo.co", {
        callback: (_err, msg) => {
          msg.respond(msg.data);
        },
      });
      const reply = await nc.request("echo.co", "ping", { timeout: 2_000 });
      expect(reply.string()).toBe("ping");
      await nc.flush();

      // Commands buffered while the server is away are written after the reconnect.
      await nats.kill("SIGKILL");
      await nats.restart();
      await waitFor("a request after the restart", async () => {
        const again = await nc.request("echo.co", "back", { timeout: 500 }).catch(() => undefined);
        return again?.string() === "back";
      });
      sub.unsubscribe();
    } finally {
      await nc.close();
    }
  });

  test("a connection without the expected internals is left alone", () => {
    const fake = { protocol: { sendCommand: "not a function" } };
    expect(coalesceWrites(fake as never)).toBe(false);
    expect(fake.protocol.sendCommand).toBe("not a function");
  });
});

import { describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { startNats } from "../helpers/nats.ts";

describe("startNats helper", () => {
  test("starts a private JetStream server on a random port, survives restart", async () => {
    await using nats = await startNats();
    expect(nats.port).not.toBe(4222);
    const jsm = await jetstreamManager(nats.nc);
    await jsm.streams.add({ name: "T", subjects: ["t.>"] });
    await nats.kill();
    await nats.restart();
    const info = await jsm.streams.info("T");
    expect(info.config.name).toBe("T");
  });
});

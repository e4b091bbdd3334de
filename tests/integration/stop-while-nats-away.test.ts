import { expect, test } from "bun:test";
import { startHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";

// A stop (SIGTERM in Kubernetes) that comes while NATS is away. nats.js's drain cannot flush to a
// server that is gone and fails with "connection disconnected", which made the stop fail and the
// process exit 1. Given a running hub, when its nats-server dies and the hub is stopped, then the
// stop completes, the connection is closed, and the hub says why it did not drain.

test("stopping while NATS is away completes, closing the connection", async () => {
  const hub = await startHub({});
  await hub.nats.kill("SIGKILL");
  await waitFor("the hub to see NATS gone", () => !hub.running.hub.connected());
  await hub.running.stop(); // rejected before
  expect(hub.running.hub.nc.isClosed()).toBe(true);
  expect(hub.logs()).toContain("stopping while NATS is away");
  expect(hub.logs()).not.toContain("stop failed");
  await hub.nats.stop();
});

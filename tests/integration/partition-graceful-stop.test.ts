/**
 * A graceful stop at P > 1 writes what the projector holds before it gives up its claims: a job
 * handed to a NATS worker (its events held back for the linger) has its view once the hub has stopped. The
 * member record goes last; released first, every slot would stand down and drop what it held.
 */
import { expect, test } from "bun:test";
import { Kvm } from "@nats-io/kv";
import { createEventLayout } from "../../shared/jobs/index.ts";
import { DEFAULT_CLIENTS, startHub } from "../helpers/hub.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const P = 2;

test("a graceful stop at P = 2 writes the views the projector still held", async () => {
  await using nats = await startNats();
  const hub = await startHub({
    nats,
    natsOptions: { partitions: P },
    yaml: `
projector: { linger: 1m }
routes:
  - key: demo.long
    executor: { kind: nats }
`,
  });
  const res = await hub.run(
    { request_id: "held-1", route: "demo.long", input: "x" },
    DEFAULT_CLIENTS[0]?.token ?? "",
  );
  expect(res.status).toBe(202);
  const { job_id } = (await res.json()) as { job_id: string };
  const layout = createEventLayout(P);
  const p = layout.partitionOf({ job_id });
  const jsm = hub.running.hub.jsm;
  await waitFor("job.dispatched stored", async () => {
    const info = await jsm.streams.info(layout.stream(p), {
      subjects_filter: layout.filters.kind(p, "job"),
    });
    return Object.keys(info.state.subjects ?? {}).length === 1;
  });
  const views = await new Kvm(nats.nc).open(layout.viewBucket(p));
  const key = `acme.${job_id}`;
  // Held back by the linger (1 min): no view yet, even a moment later.
  await Bun.sleep(500);
  expect((await views.get(key))?.operation).toBeUndefined();
  await hub.stop();
  const view = await views.get(key);
  expect(view?.operation).toBe("PUT");
  expect(view?.json<{ status: string }>().status).toBe("dispatched");
});

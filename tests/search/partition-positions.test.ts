/**
 * The search index of a hub of several partitions, on both engines: each partition's indexer has
 * its own position and owner epoch, so claims do not fence each other; the whole index's position
 * sums the partitions' pending and is as fresh as the oldest; partition 0's row is the one of an
 * index made before partitions.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { IndexFencedError, type IndexStore } from "../../shared/search/index.ts";
import { doneJobView, INDEX_ENGINES } from "../helpers/index-engines.ts";

const view = doneJobView;

for (const [engine, open] of INDEX_ENGINES) {
  describe(`index positions per partition on ${engine}`, () => {
    let store: IndexStore;
    let cleanup: () => Promise<void>;

    beforeAll(async () => {
      ({ store, cleanup } = await open());
      await store.migrate();
    });
    afterAll(async () => cleanup?.());

    test("each partition claims, writes and reads its own position", async () => {
      const owner0 = await store.claim(0);
      const owner2 = await store.claim(2);
      await store.apply({
        partition: 0,
        owner: owner0,
        rows: [{ view: view(7), tenant: undefined }],
        counts: [],
        position: { appliedSeq: 7, pending: 3, updatedMs: 2_000, stream: "s0" },
      });
      // Partition 2's claim did not fence partition 0's writer, nor the other way round.
      await store.apply({
        partition: 2,
        owner: owner2,
        rows: [{ view: view(40), tenant: undefined }],
        counts: [],
        position: { appliedSeq: 40, pending: 4, updatedMs: 1_000, stream: "s2" },
      });
      expect(await store.position(0)).toEqual({
        appliedSeq: 7,
        pending: 3,
        updatedMs: 2_000,
        stream: "s0",
        writtenSeq: 7,
      });
      expect(await store.position(2)).toMatchObject({ appliedSeq: 40, stream: "s2" });
      expect(await store.position(1)).toMatchObject({ appliedSeq: 0, stream: "" });
      // The whole index: pending summed, as fresh as the oldest partition.
      expect(await store.position()).toMatchObject({ pending: 7, updatedMs: 1_000 });
      expect(await store.heartbeat([{ partition: 2, owner: owner2, pending: 0 }], 9_000)).toEqual(
        [],
      );
      expect(await store.position(2)).toMatchObject({ pending: 0, updatedMs: 9_000 });
      expect(await store.position(0)).toMatchObject({ pending: 3, updatedMs: 2_000 });
      // Every partition a process holds in one write.
      await store.heartbeat(
        [
          { partition: 0, owner: owner0, pending: 1 },
          { partition: 2, owner: owner2, pending: 2 },
        ],
        10_000,
      );
      expect(await store.position(0)).toMatchObject({ pending: 1, updatedMs: 10_000 });
      expect(await store.position(2)).toMatchObject({ pending: 2, updatedMs: 10_000 });
      expect(await store.position(1)).toMatchObject({ appliedSeq: 0, stream: "" });
    });

    test("a newer claim of a partition fences only that partition's older writer", async () => {
      const older = await store.claim(1);
      const newer = await store.claim(1);
      const write = (owner: number) =>
        store.apply({
          partition: 1,
          owner,
          rows: [],
          counts: [],
          position: { appliedSeq: 5, pending: 0, updatedMs: 3_000, stream: "s1" },
        });
      await expect(write(older)).rejects.toBeInstanceOf(IndexFencedError);
      await write(newer);
      expect(await store.position(1)).toMatchObject({ appliedSeq: 5 });
    });
  });
}

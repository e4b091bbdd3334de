/**
 * `audit verify` names exactly the first missing sequence wherever records are missing: at the
 * start of an export, in the middle, at the end of a checkpoint's range, the checkpoint itself,
 * right after one, and (where the span is known: the live stream) at the very end. Before, a
 * record missing at the start was reported as a checkpoint mismatch at the next sequence, and a
 * missing checkpoint as a broken link and events sealed by no checkpoint.
 */
import { describe, expect, test } from "bun:test";
import { generateKeyPair } from "jose";
import {
  type AuditRecord,
  ChainSegment,
  GENESIS_HASH,
  signCheckpoint,
  verifyChain,
} from "../../shared/audit/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";

const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });

const event = (seq: number): AuditRecord => ({
  seq,
  subject: `sy.evt.acme.job_${seq}.job`,
  value: { id: `e${seq}`, type: "job.done", job_id: `job_${seq}`, data: { output: `out ${seq}` } },
});

/**
 * The stream as services/audit/checkpointer.ts seals it: `n` events, a checkpoint after every
 * `every` of them, each checkpoint's range starting right after the previous one's (so it holds
 * the previous checkpoint's own message), and `tail` unsealed events at the end.
 */
async function stream(n: number, every: number, tail: number): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  let seq = 1;
  let prev = GENESIS_HASH;
  let from = 1;
  let segment = new ChainSegment(prev);
  for (let i = 0; i < n; i++) {
    const e = event(seq++);
    records.push(e);
    segment.add(e.seq, e.subject, e.value);
    if (segment.count < every && i < n - 1) continue;
    const body = {
      from_seq: from,
      to_seq: e.seq,
      count: segment.count,
      prev_hash: prev,
      hash: segment.hash,
      digests: segment.digests(),
      created_at: "2026-01-01T00:00:00Z",
      key_id: "k1",
    };
    records.push({
      seq: seq++,
      subject: SINGLE_PARTITION_LAYOUT.checkpointSubject(0),
      value: await signCheckpoint(body, privateKey),
    });
    prev = segment.hash;
    from = e.seq + 1;
    segment = new ChainSegment(prev);
  }
  for (let i = 0; i < tail; i++) records.push(event(seq++));
  return records;
}

// 1..4 events, 5 checkpoint, 6..9 events, 10 checkpoint (range 5..9), 11..12 events, 13
// checkpoint (range 10..12), 14..15 unsealed events.
const FULL = await stream(10, 4, 2);
const LAST = (FULL.at(-1) as AuditRecord).seq;
const without = (...seqs: number[]) => FULL.filter((r) => !seqs.includes(r.seq));

describe("audit verify names the first missing sequence", () => {
  test("the untouched stream verifies", async () => {
    expect(await verifyChain(FULL, publicKey, { firstSeq: 1, lastSeq: LAST })).toEqual({
      checkpoints: 3,
      sealed: 10,
      unsealed: 2,
      problems: [],
    });
  });

  // Every record but the last one, dropped alone: the export still ends with a later record.
  test.each(
    FULL.slice(0, -1).map((r) => [r.seq, r.subject.startsWith("sy.evt") ? "event" : "checkpoint"]),
  )("sequence %d (%s) dropped: exactly one problem, missing at that sequence", async (seq) => {
    const report = await verifyChain(without(seq as number), publicKey);
    expect(report.problems).toEqual([{ seq, problem: `missing: sequence ${seq} is absent` }]);
  });

  test.each([
    ["the start", [1, 2, 3]],
    ["the start of a later range, with the checkpoint before it", [5, 6]],
    ["the end of a range", [8, 9]],
    ["a range's last event and its checkpoint", [12, 13]],
    ["a whole range with both checkpoints around it", [5, 6, 7, 8, 9, 10]],
  ])(
    "a run of sequences dropped at %s: one problem at its first sequence",
    async (_where, seqs) => {
      const first = seqs[0] as number;
      const last = seqs.at(-1) as number;
      const report = await verifyChain(without(...seqs), publicKey);
      expect(report.problems).toEqual([
        { seq: first, problem: `missing: sequences ${first}..${last} are absent` },
      ]);
    },
  );

  test("an export that starts later (an event before the first checkpoint's range): missing from the range's start", async () => {
    // As `events --from-seq 3`: the first checkpoint seals 1..4, so 1..2 are missing.
    const report = await verifyChain(
      FULL.filter((r) => r.seq >= 3),
      publicKey,
    );
    expect(report.problems[0]).toEqual({ seq: 1, problem: "missing: sequences 1..2 are absent" });
  });

  test("the first missing of several is first", async () => {
    const report = await verifyChain(without(1, 7, 14), publicKey);
    expect(report.problems).toEqual([
      { seq: 1, problem: "missing: sequence 1 is absent" },
      { seq: 7, problem: "missing: sequence 7 is absent" },
      { seq: 14, problem: "missing: sequence 14 is absent" },
    ]);
  });

  test("the very end: with the stream's span (the live stream), the records missing after the last one", async () => {
    const lastOnly = await verifyChain(without(LAST), publicKey, { firstSeq: 1, lastSeq: LAST });
    expect(lastOnly.problems).toEqual([
      { seq: LAST, problem: `missing: sequence ${LAST} is absent` },
    ]);
    // The last checkpoint and everything after it.
    const tail = await verifyChain(
      FULL.filter((r) => r.seq < 13),
      publicKey,
      { firstSeq: 1, lastSeq: LAST },
    );
    expect(tail.problems).toEqual([
      { seq: 13, problem: `missing: sequences 13..${LAST} are absent` },
    ]);
    // The very start, where no checkpoint is left to say so.
    const head = await verifyChain(
      FULL.filter((r) => r.seq >= 14),
      publicKey,
      { firstSeq: 1, lastSeq: LAST },
    );
    expect(head.problems).toEqual([{ seq: 1, problem: "missing: sequences 1..13 are absent" }]);
    // An empty stream has nothing missing; an emptied one everything.
    expect((await verifyChain([], publicKey, { firstSeq: 0, lastSeq: 0 })).problems).toEqual([]);
    expect((await verifyChain([], publicKey, { firstSeq: 1, lastSeq: 3 })).problems).toEqual([
      { seq: 1, problem: "missing: sequences 1..3 are absent" },
    ]);
  });
});

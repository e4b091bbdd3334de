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
const other = await generateKeyPair("EdDSA", { crv: "Ed25519" });

const event = (seq: number) => ({
  seq,
  subject: `sy.evt.acme.job_${seq}.job`,
  value: { id: `e${seq}`, type: "job.done", job_id: `job_${seq}`, data: { output: `out ${seq}` } },
});

/** Events 1..n with a checkpoint after every `every` events, sealed with `key`. */
async function history(n: number, every: number, key = privateKey): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  let seq = 1;
  let prev = GENESIS_HASH;
  let from = 1;
  let segment = new ChainSegment(prev);
  for (let i = 0; i < n; i++) {
    const e = event(seq++);
    records.push(e);
    segment.add(e.seq, e.subject, e.value);
    if (segment.count === every || i === n - 1) {
      const checkpoint = await signCheckpoint(
        {
          from_seq: from,
          to_seq: e.seq,
          count: segment.count,
          prev_hash: prev,
          hash: segment.hash,
          digests: segment.digests(),
          created_at: "2026-01-01T00:00:00Z",
          key_id: "k1",
        },
        key,
      );
      records.push({
        seq: seq++,
        subject: SINGLE_PARTITION_LAYOUT.checkpointSubject(0),
        value: checkpoint,
      });
      prev = segment.hash;
      from = seq;
      segment = new ChainSegment(prev);
    }
  }
  return records;
}

describe("audit chain", () => {
  test("an untouched history verifies, signatures included", async () => {
    const report = await verifyChain(await history(12, 5), publicKey);
    expect(report).toEqual({ checkpoints: 3, sealed: 12, unsealed: 0, problems: [] });
  });

  test("events after the last checkpoint are counted as unsealed", async () => {
    const records = [...(await history(5, 5)), event(7), event(8)];
    const report = await verifyChain(records, publicKey);
    expect(report.unsealed).toBe(2);
    expect(report.problems).toEqual([]);
  });

  test("an altered event is reported at its own sequence", async () => {
    const records = await history(12, 5);
    const target = records.findIndex((r) => r.seq === 3);
    const original = records[target] as AuditRecord;
    records[target] = {
      ...original,
      value: { ...(original.value as object), data: { output: "forged" } },
    };
    const report = await verifyChain(records, publicKey);
    expect(report.problems.map((p) => p.seq)).toEqual([3]);
  });

  test("a dropped event is reported at its sequence", async () => {
    const records = (await history(12, 5)).filter((r) => r.seq !== 4);
    const report = await verifyChain(records, publicKey);
    expect(report.problems[0]?.seq).toBe(4);
    expect(report.problems[0]?.problem).toContain("missing");
  });

  test("two swapped events are reported where the order breaks", async () => {
    const records = await history(12, 5);
    const i = records.findIndex((r) => r.seq === 8);
    [records[i], records[i + 1]] = [records[i + 1] as AuditRecord, records[i] as AuditRecord];
    const report = await verifyChain(records, publicKey);
    expect(report.problems.some((p) => p.seq === 8 && p.problem.includes("out of order"))).toBe(
      true,
    );
  });

  test("a checkpoint signed with another key fails signature verification", async () => {
    const records = await history(5, 5, other.privateKey);
    const report = await verifyChain(records, publicKey);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]?.problem).toContain("signature");
  });

  test("a checkpoint whose stored hash was edited no longer matches its signature", async () => {
    const records = await history(5, 5);
    const last = records.at(-1) as AuditRecord;
    const cp = last.value as { data: Record<string, unknown> };
    records[records.length - 1] = { ...last, value: { ...cp, data: { ...cp.data, count: 4 } } };
    const report = await verifyChain(records, publicKey);
    expect(report.problems.some((p) => p.problem.includes("signed count differs"))).toBe(true);
  });
});

import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { CryptoKey, KeyObject } from "jose";
import {
  type AuditCheckpoint,
  ChainSegment,
  GENESIS_HASH,
  isCheckpoint,
  signCheckpoint,
} from "../../shared/audit/index.ts";
import { EVENT_SUBJECT_ROOT, readStream } from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";

export interface CheckpointerDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  /** The partition whose stream this checkpointer seals (one chain per partition). */
  readonly partition: number;
  readonly signingKey: CryptoKey | KeyObject;
  readonly keyId: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Most job events one checkpoint covers, which bounds its size (8 bytes of digest each). */
  readonly maxEvents?: number;
}

export interface Checkpointer {
  /** Seals everything appended since the last checkpoint; returns the checkpoints written. */
  runOnce(): Promise<number>;
  start(intervalMs: number): void;
  stop(): Promise<void>;
}

const decoder = new TextDecoder();

/**
 * Appends signed audit.checkpoint messages that chain SHA-256 over every job event. Appends use the
 * checkpoint subject's expected last sequence, so two checkpointers can never fork the chain: the
 * loser's append is refused and it starts over from the winner's checkpoint.
 */
export function createCheckpointer(deps: CheckpointerDeps): Checkpointer {
  const maxEvents = deps.maxEvents ?? 10_000;
  const stream = deps.layout.stream(deps.partition);
  const checkpointSubject = deps.layout.checkpointSubject(deps.partition);
  let timer: ReturnType<typeof setInterval> | undefined;
  // Runs are serialised: a timer tick and an explicit runOnce never seal concurrently.
  let queue: Promise<unknown> = Promise.resolve();

  const lastCheckpoint = async (): Promise<{ seq: number; checkpoint?: AuditCheckpoint }> => {
    const msg = await deps.jsm.streams.getMessage(stream, { last_by_subj: checkpointSubject });
    if (!msg) return { seq: 0 };
    const value: unknown = JSON.parse(decoder.decode(msg.data));
    return isCheckpoint(value) ? { seq: msg.seq, checkpoint: value } : { seq: msg.seq };
  };

  const sealOne = async (): Promise<boolean> => {
    const info = await deps.jsm.streams.info(stream);
    const head = info.state.last_seq;
    const last = await lastCheckpoint();
    const fromSeq = last.checkpoint
      ? last.checkpoint.data.to_seq + 1
      : Math.max(1, info.state.first_seq);
    if (fromSeq > head) return false;
    const segment = new ChainSegment(last.checkpoint?.data.hash ?? GENESIS_HASH);
    let toSeq = fromSeq - 1;
    for await (const record of readStream(deps.js, { stream, fromSeq })) {
      if (record.seq > head) break;
      toSeq = record.seq;
      if (record.subject.startsWith(`${EVENT_SUBJECT_ROOT}.`)) {
        segment.add(record.seq, record.subject, JSON.parse(decoder.decode(record.data)));
        if (segment.count >= maxEvents) break;
      }
      if (record.seq === head) break;
    }
    if (segment.count === 0) return false;
    const checkpoint = await signCheckpoint(
      {
        from_seq: fromSeq,
        to_seq: toSeq,
        count: segment.count,
        prev_hash: segment.previousHex,
        hash: segment.hash,
        digests: segment.digests(),
        created_at: deps.clock.now().toISOString(),
        key_id: deps.keyId,
      },
      deps.signingKey,
    );
    try {
      await deps.js.publish(checkpointSubject, JSON.stringify(checkpoint), {
        expect: { lastSubjectSequence: last.seq },
        msgID: `checkpoint-${fromSeq}-${toSeq}`,
      });
    } catch (err) {
      deps.logger.info(
        { err: (err as Error).message },
        "another checkpointer sealed this range first",
      );
      return false;
    }
    deps.logger.info(
      { partition: deps.partition, from_seq: fromSeq, to_seq: toSeq, count: segment.count },
      "audit checkpoint appended",
    );
    return true;
  };

  const runOnce = async (): Promise<number> => {
    let written = 0;
    while (await sealOne()) written++;
    return written;
  };

  const serialised = (): Promise<number> => {
    const run = queue.then(runOnce, runOnce);
    queue = run.catch(() => 0);
    return run;
  };

  return {
    runOnce: serialised,
    start(intervalMs) {
      timer = setInterval(() => {
        serialised().catch((err: unknown) => {
          deps.logger.warn({ err: (err as Error).message }, "audit checkpoint failed; will retry");
        });
      }, intervalMs);
    },
    async stop() {
      if (timer) clearInterval(timer);
      await queue;
    },
  };
}

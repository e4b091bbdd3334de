import type { JsMsg } from "@nats-io/jetstream";

/**
 * Acknowledges a durable with AckPolicy.All: one ack settles every delivery up to its stream
 * sequence, so a projection runner sends one ack per round instead of one per event. Such an
 * ack is safe only below the lowest sequence still unwritten (a lingering job's events must be
 * redelivered after a crash), so this tracks what was delivered and what was written, and acks
 * the highest written message below that floor. The same floor is the position a read model
 * that keeps its own (the search index) commits with its rows.
 */
export class AckFloor {
  /** Delivered, not yet written, in arrival order (first deliveries arrive in stream order). */
  private pending: number[] = [];
  private head = 0;
  /** Redeliveries arrive out of order; they are few (after a crash) and kept apart. */
  private readonly pendingOutOfOrder = new Set<number>();
  private readonly done = new Set<number>();
  private written: JsMsg[] = [];
  private last = 0;

  /** A message was taken from the consumer. */
  delivered(msg: JsMsg): void {
    if (msg.seq <= this.last || msg.info.redelivered) this.pendingOutOfOrder.add(msg.seq);
    else this.pending.push(msg.seq);
    this.last = Math.max(this.last, msg.seq);
  }

  /** Its effect is persisted (or it was terminated): it may be acknowledged. */
  settled(msg: JsMsg): void {
    if (!this.pendingOutOfOrder.delete(msg.seq)) this.done.add(msg.seq);
    this.written.push(msg);
  }

  /** The lowest sequence still unwritten (Infinity when none). */
  private floor(): number {
    while (this.head < this.pending.length && this.done.has(this.pending[this.head] as number)) {
      this.done.delete(this.pending[this.head] as number);
      this.head++;
    }
    if (this.head > 4_096 && this.head * 2 > this.pending.length) {
      this.pending = this.pending.slice(this.head);
      this.head = 0;
    }
    let floor = this.pending[this.head] ?? Number.POSITIVE_INFINITY;
    for (const seq of this.pendingOutOfOrder) floor = Math.min(floor, seq);
    return floor;
  }

  /**
   * The highest sequence at or below which every delivered message is settled, once the messages
   * of `settling` are too: what a read model commits as its position in the same write. Reads
   * only; 0 before any delivery.
   */
  positionIf(settling: ReadonlySet<number>): number {
    let i = this.head;
    while (i < this.pending.length) {
      const seq = this.pending[i] as number;
      if (!this.done.has(seq) && !settling.has(seq)) break;
      i++;
    }
    let floor = this.pending[i] ?? Number.POSITIVE_INFINITY;
    for (const seq of this.pendingOutOfOrder) {
      if (!settling.has(seq)) floor = Math.min(floor, seq);
    }
    return Math.min(floor - 1, this.last);
  }

  /**
   * The message to acknowledge now, at most one: the highest written message below the floor.
   * The caller sends it (a runner alone on its durable at once, a shared feed once every read
   * model it feeds may: shared-feed.ts).
   */
  flush(): JsMsg | undefined {
    if (this.written.length === 0) return undefined;
    const floor = this.floor();
    let best: JsMsg | undefined;
    const keep: JsMsg[] = [];
    for (const msg of this.written) {
      if (msg.seq < floor) {
        if (best === undefined || msg.seq > best.seq) best = msg;
      } else {
        keep.push(msg);
      }
    }
    this.written = keep;
    return best;
  }

  /** Messages delivered and not yet acknowledged. */
  get outstanding(): number {
    return this.pending.length - this.head + this.pendingOutOfOrder.size + this.written.length;
  }
}

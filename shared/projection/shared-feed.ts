import type { JsMsg } from "@nats-io/jetstream";

/**
 * One delivery per event for the read models of one process (docs/architecture.md, "One delivery
 * for both read models"). The job view's runner of a partition hosts: while it leads, it offers
 * its durable's deliveries. The search index's runner of the same partition follows: once it has
 * caught up on its own durable, it asks the host to feed it, and the host takes its durable again
 * from the lower of the two positions. The follower keeps its own lease, position, queue and
 * held jobs; it never acknowledges the host's messages (its position is committed with its rows),
 * so the view's acks never wait for the index. A follower that falls behind is dropped from the
 * feed and catches up on its own durable, so a slow index never stalls the view.
 */
export interface Follower {
  /** For logs: the follower's read model. */
  readonly name: string;
  /** The most deliveries it may have queued; one more and the host drops it ("fell_behind"). */
  readonly maxQueued: number;
  /** Where its fold must start on the host's durable: its committed position + 1. */
  resumeFrom(): number;
  /** The host's durable was taken again, from at most `resumeFrom()`: its deliveries follow. */
  fed(): void;
  push(msg: JsMsg): void;
  queued(): number;
  /**
   * The host stopped feeding it: the host lost its lease, took its durable again, or stops
   * ("host_halted"), or the follower's queue was full ("fell_behind"). It goes back to its own
   * durable from its position.
   */
  unfed(reason: UnfedReason): void;
}

export type UnfedReason = "host_halted" | "fell_behind";

/** A leading host, as its followers see it. */
export interface FeedHost {
  /**
   * Takes the host's durable again from the lower of its own position and the follower's, and
   * feeds the follower from there. False when the host no longer leads (the follower stays on
   * its own durable).
   */
  attach(follower: Follower): Promise<boolean>;
  /** The follower leaves (its lease lost, it stops): no `unfed` call. */
  detach(follower: Follower): void;
}

/** The hosts of one process, one per partition it leads, for the followers of the same process. */
export interface SharedFeeds {
  /** The host leads `partition`: followers may attach until the returned withdrawal is called. */
  offer(partition: number, host: FeedHost): () => void;
  host(partition: number): FeedHost | undefined;
  /** Calls `offered` each time a host is offered for `partition`; returns the unsubscribe. */
  watch(partition: number, offered: () => void): () => void;
}

export function createSharedFeeds(): SharedFeeds {
  const hosts = new Map<number, FeedHost>();
  const watchers = new Map<number, Set<() => void>>();
  return {
    offer(partition, host) {
      hosts.set(partition, host);
      for (const offered of watchers.get(partition) ?? []) offered();
      return () => {
        if (hosts.get(partition) === host) hosts.delete(partition);
      };
    },
    host: (partition) => hosts.get(partition),
    watch(partition, offered) {
      let set = watchers.get(partition);
      if (set === undefined) {
        set = new Set();
        watchers.set(partition, set);
      }
      set.add(offered);
      return () => set.delete(offered);
    },
  };
}

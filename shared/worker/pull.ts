import type { Consumer, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { onReconnect } from "../nats/index.ts";

export interface PullLoopOptions {
  readonly consumer: Consumer;
  /**
   * The consumer's connection: at each reconnect the pull in progress ends (after what it
   * delivered) and a new one starts at once. nats.js would resume it only after reading the
   * consumer's info, and one pull expiry later when that read fails (JetStream still recovering).
   */
  readonly nc: Pick<NatsConnection, "status">;
  /** How many more messages may be taken now (0: wait for a slot). */
  readonly free: () => number;
  /** Resolves when a running handler finishes (a slot may be free again). */
  readonly slotFreed: () => Promise<void>;
  readonly onMessage: (msg: JsMsg) => void;
  readonly onError: (err: unknown) => void;
  /**
   * How long one pull request waits for messages (default 30 s) and how often nats-server shows it
   * alive (default half that). A waiting pull is answered as soon as messages arrive, so a long one
   * costs no latency; a short one wakes an idle process often (2 s cost 0.0025 cores per loop, a
   * quarter of the whole hub's idle budget).
   */
  readonly expiresMs?: number;
  readonly idleHeartbeatMs?: number;
}

export interface PullLoop {
  /** Ends the pull in progress and the loop; messages already handed out are the caller's. */
  stop(): Promise<void>;
}

/**
 * Pulls with `fetch` sized to the free slots, so a process never holds more un-started messages
 * than it can run: the rest of a burst stays in JetStream, and no buffered message sits out its
 * ack wait in memory.
 */
export function runPullLoop(options: PullLoopOptions): PullLoop {
  let stopped = false;
  let current: { close(): Promise<unknown> } | undefined;
  let wakeSlot: (() => void) | undefined;
  const stopWatchingConnection = onReconnect(options.nc, () => {
    void current?.close().catch(() => undefined);
  });
  const loop = (async () => {
    while (!stopped) {
      if (options.free() <= 0) {
        await Promise.race([
          options.slotFreed(),
          new Promise<void>((resolve) => {
            wakeSlot = resolve;
          }),
        ]);
        continue;
      }
      try {
        const batch = await options.consumer.fetch({
          max_messages: options.free(),
          expires: options.expiresMs ?? 30_000,
          idle_heartbeat: options.idleHeartbeatMs,
        });
        current = batch;
        if (stopped) await batch.close();
        for await (const msg of batch) options.onMessage(msg);
      } catch (err) {
        // A pull can end with a status (server shutdown, leadership change) as well as fail to
        // start; either way the next pull starts after a pause.
        if (stopped) break;
        options.onError(err);
        await Bun.sleep(500);
      } finally {
        current = undefined;
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      stopWatchingConnection();
      wakeSlot?.();
      await current?.close().catch(() => undefined);
      await loop;
    },
  };
}

/** Tracks running handlers; `freed()` resolves when any of them finishes. */
export class TaskSet {
  private readonly running = new Set<Promise<void>>();
  private waiters: (() => void)[] = [];

  /** Runs `work` and tracks it until it settles. */
  add(work: Promise<void>): void {
    const tracked = work.finally(() => {
      this.running.delete(tracked);
      const wake = this.waiters;
      this.waiters = [];
      for (const resolve of wake) resolve();
    });
    this.running.add(tracked);
  }

  get size(): number {
    return this.running.size;
  }

  /**
   * Resolves when one running handler settles (at once when none runs). Not Promise.race over
   * the running set: that attaches a reaction to every running promise on each call, which a
   * saturated pull loop calls once per message (170k pending reactions seen in a heap census).
   */
  freed(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Waits for every running handler. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }
}

/**
 * The round rate the runners of one read model share in one process. Each runner starts a round
 * at most every `roundGapMs` while its queue is not full; with P partitions that is P times the
 * rounds of one partition for the same events, each a fraction of the size: at P = 8 the
 * projector's and the indexer's acks per job were 7× those at P = 1 (one ack, one write flush and
 * for the index one SQLite commit per round), the read models' share of the CPU the hub pays more
 * per job at P = 8. Sharing the pace keeps the process's rounds, and the events per round, about
 * where one partition has them: each runner's gap is the base gap times the runners folding, up
 * to the linger (a job's effect never waits longer for a round than it may wait for its events).
 * A runner whose queue fills (maxBatch) starts its round at once, as before.
 */
export interface RoundPacer {
  /** A runner started folding: it counts until the returned `leave` is called (idempotent). */
  join(): () => void;
  /** Runners folding now. */
  folding(): number;
}

export function createRoundPacer(): RoundPacer {
  let folding = 0;
  return {
    join() {
      folding++;
      let left = false;
      return () => {
        if (left) return;
        left = true;
        folding--;
      };
    },
    folding: () => folding,
  };
}

/** A runner's least gap between rounds: `baseMs` per runner folding, at most `capMs`. */
export function sharedRoundGapMs(
  pacer: RoundPacer | undefined,
  pace: { readonly baseMs: number; readonly capMs: number },
): number {
  const runners = Math.max(1, pacer?.folding() ?? 1);
  return Math.max(pace.baseMs, Math.min(pace.baseMs * runners, pace.capMs));
}

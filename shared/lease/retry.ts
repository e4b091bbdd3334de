/**
 * Runs `step` until it succeeds or `keepTrying()` turns false, backing off from 200 ms to 5 s.
 * For the work a lease holder must keep running (taking its durable again): a holder that stops
 * trying keeps the lease and does nothing, which stops that work in every replica.
 */
export async function retryWhile(options: {
  readonly step: () => Promise<void>;
  readonly keepTrying: () => boolean;
  readonly onError: (err: Error, retryMs: number) => void;
}): Promise<void> {
  for (let attempt = 1; options.keepTrying(); attempt++) {
    try {
      return await options.step();
    } catch (err) {
      const retryMs = Math.min(100 * 2 ** attempt, 5_000);
      options.onError(err as Error, retryMs);
      await Bun.sleep(retryMs);
    }
  }
}

/**
 * Fuzz settings. CI runs every property with a fixed seed and a modest number of runs, so failures
 * reproduce exactly and the suite stays fast. On demand:
 *
 *   FUZZ_RUNS=5000 npx bun test tests/fuzz              # longer, same seed
 *   FUZZ_RUNS=5000 FUZZ_SEED=random npx bun test tests/fuzz   # new inputs; the seed is printed on failure
 */
export const FUZZ_SEED: number = (() => {
  const raw = process.env.FUZZ_SEED;
  if (raw === "random") return Math.floor(Math.random() * 2 ** 31);
  const parsed = Number(raw);
  return raw !== undefined && Number.isInteger(parsed) ? parsed : 20_250_707;
})();

/** `FUZZ_RUNS` when set to a positive integer, else the property's CI default. */
export function fuzzRuns(ciDefault: number): number {
  const parsed = Number(process.env.FUZZ_RUNS);
  return Number.isInteger(parsed) && parsed > 0 ? parsed : ciDefault;
}

/** A per-test timeout that grows with FUZZ_RUNS (about 20 ms per HTTP round, at least 30 s). */
export function fuzzTimeoutMs(ciDefault: number): number {
  return Math.max(30_000, fuzzRuns(ciDefault) * 20);
}

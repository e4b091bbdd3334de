/**
 * The memory-allocator settings every hub service runs with. The image (deploy/Dockerfile) and
 * the systemd unit set the same ones (tests/deploy/allocator-env.test.ts holds them together and
 * checks that the pinned Bun takes them). The benchmark gives them to the hub's services and to
 * the JetStream floors (a floor must cost no more than the hub could), not to the peers, which
 * run as their users run them. docs/performance.md, "Memory threads", has the measurements.
 *
 * - `MIMALLOC_PURGE_DELAY=1000`: mimalloc, Bun's malloc, gives freed pages back to the system
 *   after 1 s instead of 100 ms, so the heap blocks a collection frees and the next allocations
 *   take again are not faulted in each time.
 * - `BUN_JSC_useWarmUpMarkedBlocks=0`: JavaScriptCore's `JSCWarmUp` thread stops pre-faulting heap
 *   blocks ahead of demand; with the longer purge delay new blocks come from memory still resident.
 * - `MIMALLOC_PURGE_HOLES=0`: mimalloc stops discarding the free 4-KiB pages inside its pages
 *   still in use. By default `mi-scavenger` swept each thread's heap for such holes up to every
 *   100 ms and gave each back with its own `madvise`, which flushes the other cores' TLBs; the
 *   next allocation there faults the page in again. Pages wholly free still go back after the
 *   purge delay.
 */
export const ALLOCATOR_ENV: Readonly<Record<string, string>> = {
  MIMALLOC_PURGE_DELAY: "1000",
  MIMALLOC_PURGE_HOLES: "0",
  BUN_JSC_useWarmUpMarkedBlocks: "0",
};

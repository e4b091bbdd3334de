/**
 * A bounded map in two generations: writes go to the young one; when it holds half the budget it
 * becomes the old one and the previous old one is dropped whole. Used instead of an LRU because a
 * Map that is only appended to and replaced keeps lookups and inserts O(1) (JSC iterates past
 * deleted slots, which made LRU eviction from the front O(n) in projector profiles).
 */
export class GenerationalMap<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  private readonly half: number;

  /** Holds about `maxEntries` values at most. */
  constructor(maxEntries: number) {
    this.half = Math.max(1, Math.floor(maxEntries / 2));
  }

  get(key: string): V | undefined {
    return this.young.get(key) ?? this.old.get(key);
  }

  set(key: string, value: V): void {
    this.young.set(key, value);
    if (this.young.size >= this.half) {
      this.old = this.young;
      this.young = new Map();
    }
  }

  delete(key: string): void {
    this.young.delete(key);
    this.old.delete(key);
  }

  get size(): number {
    return this.young.size + this.old.size;
  }
}

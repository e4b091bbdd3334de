/**
 * The fair-share rule of partition claims (docs/architecture.md, "Partition claims"), pure: given
 * what one member sees (the live members of its group, who owns which partition), what it does
 * next. Every member runs the same rule on its own view; compare-and-set on the claim keys
 * settles races, so the rule only has to converge, not to be agreed on.
 */

/** What one member sees when it decides. */
export interface ClaimsView {
  /** This member's id. */
  readonly me: string;
  /** P: the partitions of the group are 0 … total - 1. */
  readonly total: number;
  /** The partitions this member competes for (its started leases, less any sitting out). */
  readonly wanted: ReadonlySet<number>;
  /** The group's members seen alive (this member is counted whether listed or not). */
  readonly members: readonly string[];
  /** The owner of each claimed partition; a partition not listed is free. */
  readonly owners: ReadonlyMap<number, string>;
  /** The membership has not changed for a couple of renewals: extras may be released. */
  readonly stable: boolean;
  /**
   * The group this one follows, where one process runs both (the index follows the view: one
   * delivery feeds both only where one member holds a partition in both groups): the partitions
   * this member holds there and who owns each.
   */
  readonly follow?: {
    readonly mine: ReadonlySet<number>;
    readonly owners: ReadonlyMap<number, string>;
  };
}

export type ClaimAction =
  | { readonly kind: "claim"; readonly partition: number }
  | { readonly kind: "release"; readonly partition: number }
  /** Released for the member that holds the partition in the followed group (it takes it next). */
  | { readonly kind: "handover"; readonly partition: number };

/** A stable spread of starting points, so members claiming at once rarely race for one key. */
function offsetOf(id: string, total: number): number {
  let hash = 0;
  for (let i = 0; i < id.length; i++) hash = (hash * 31 + id.charCodeAt(i)) >>> 0;
  return hash % total;
}

function countsOf(view: ClaimsView, live: ReadonlySet<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const member of live) counts.set(member, 0);
  for (const owner of view.owners.values()) {
    if (live.has(owner)) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}

/** The member that gives a partition up when someone is starved: the largest, lowest id first. */
function largest(counts: ReadonlyMap<string, number>): string | undefined {
  let best: string | undefined;
  for (const [member, n] of counts) {
    const bestN = best === undefined ? -1 : (counts.get(best) ?? 0);
    if (n > bestN || (n === bestN && best !== undefined && member < best)) best = member;
  }
  return best;
}

/**
 * Each member ends with floor(P/R) or ceil(P/R) partitions. A member claims free partitions
 * (unclaimed, released, or owned by a member no longer alive) up to ceil(P/R), or only up to
 * floor(P/R) while another member has fewer than that, so a newcomer is not starved by an older
 * member's second pick. Releases wait for a stable membership and for no partition to be free
 * (one at a time: the last release was taken), and only the largest holder releases when it
 * is not above ceil(P/R) but someone is below floor(P/R). A late renewal or a member joining
 * therefore moves at most what the fair share requires.
 */
export function decideClaims(view: ClaimsView): ClaimAction[] {
  const { me, total } = view;
  if (total <= 0) return [];
  const live = new Set([...view.members, me]);
  const counts = countsOf(view, live);
  const floor = Math.floor(total / live.size);
  const ceil = Math.ceil(total / live.size);
  const mine = [...view.owners].filter(([, owner]) => owner === me).map(([p]) => p);
  const starved = [...counts].some(([member, n]) => member !== me && n < floor);
  const limit = starved ? floor : ceil;
  const offset = offsetOf(me, total);
  const paired = (p: number) => view.follow?.mine.has(p) === true;
  // Partitions it holds in the followed group first, then its own spread of starting points.
  const rank = (p: number) => (paired(p) ? 0 : total) + ((p - offset + total) % total);
  const free = [...view.wanted]
    .filter((p) => p >= 0 && p < total && !live.has(view.owners.get(p) ?? ""))
    .sort((a, b) => rank(a) - rank(b));
  if (mine.length < limit) {
    return free.slice(0, limit - mine.length).map((partition) => ({ kind: "claim", partition }));
  }
  // One over its share for a partition it holds in the followed group (its holder here handed it
  // over); one of its partitions that is not paired is released next.
  const pairedFree = free.filter(paired);
  if (pairedFree[0] !== undefined && mine.length <= ceil) {
    return [{ kind: "claim", partition: pairedFree[0] }];
  }
  const anyFree = [...Array(total).keys()].some((p) => !live.has(view.owners.get(p) ?? ""));
  if (!view.stable || anyFree || mine.length === 0) return [];
  const unpaired = mine.filter((p) => !paired(p));
  const extra = mine.length > ceil || (mine.length > floor && starved && largest(counts) === me);
  if (extra) {
    return [{ kind: "release", partition: Math.max(...(unpaired.length > 0 ? unpaired : mine)) }];
  }
  return handover(view, { unpaired, live, counts, ceil });
}

/**
 * A partition this member holds here but not in the followed group goes to the member that holds
 * it there, if that member competes here and has room (at most its share: it may take one
 * over). One at a time, like releases.
 */
function handover(
  view: ClaimsView,
  at: {
    readonly unpaired: readonly number[];
    readonly live: ReadonlySet<string>;
    readonly counts: ReadonlyMap<string, number>;
    readonly ceil: number;
  },
): ClaimAction[] {
  if (view.follow === undefined) return [];
  for (const partition of [...at.unpaired].sort((a, b) => a - b)) {
    const leader = view.follow.owners.get(partition);
    if (leader === undefined || leader === view.me || !at.live.has(leader)) continue;
    if ((at.counts.get(leader) ?? 0) > at.ceil) continue;
    return [{ kind: "handover", partition }];
  }
  return [];
}

import { describe, expect, test } from "bun:test";
import { type ClaimAction, type ClaimsView, decideClaims } from "../../shared/lease/index.ts";

/** A view of P partitions, all wanted, with `owners` listed per partition (undefined: free). */
function given(options: {
  readonly me: string;
  readonly members: readonly string[];
  readonly owners: readonly (string | undefined)[];
  readonly stable?: boolean;
}): ClaimsView {
  const owners = new Map<number, string>();
  options.owners.forEach((owner, p) => {
    if (owner !== undefined) owners.set(p, owner);
  });
  return {
    me: options.me,
    total: options.owners.length,
    wanted: new Set(options.owners.keys()),
    members: options.members,
    owners,
    stable: options.stable ?? true,
  };
}

const claimed = (actions: ClaimAction[]) =>
  actions.filter((a) => a.kind === "claim").map((a) => a.partition);
const released = (actions: ClaimAction[]) =>
  actions.filter((a) => a.kind === "release").map((a) => a.partition);

/** Runs every member's decision in turn (each sees the others' last moves) until nothing moves. */
function settle(members: string[], owners: (string | undefined)[]) {
  let moves = 0;
  for (let round = 0; round < 50; round++) {
    let moved = false;
    for (const me of members) {
      for (const action of decideClaims(given({ me, members, owners }))) {
        owners[action.partition] = action.kind === "claim" ? me : undefined;
        moved = true;
        moves++;
      }
    }
    if (!moved) return { owners, moves };
  }
  throw new Error("no fixpoint in 50 rounds");
}

describe("decideClaims", () => {
  test("alone: claims every free partition", () => {
    const actions = decideClaims(
      given({ me: "a", members: ["a"], owners: Array<string | undefined>(4).fill(undefined) }),
    );
    expect(claimed(actions).sort()).toEqual([0, 1, 2, 3]);
  });

  test("a newcomer takes no more than floor(P/R) while another member is below it", () => {
    // Given a holds 2 of 4 and c holds none, when b decides with one partition free
    const view = given({ me: "b", members: ["a", "b", "c"], owners: ["a", "a", undefined, "c"] });
    // then b, holding none, claims it
    expect(claimed(decideClaims(view))).toEqual([2]);
    const starvedView = given({
      me: "b",
      members: ["a", "b", "c"],
      owners: ["a", "b", undefined, undefined],
    });
    // b already has floor(4/3) = 1 and c has none: b leaves the free ones to c
    expect(decideClaims(starvedView)).toEqual([]);
  });

  test("a partition of a member no longer alive is free", () => {
    const view = given({ me: "b", members: ["b"], owners: ["gone", "gone", "b", "b"] });
    expect(claimed(decideClaims(view)).sort()).toEqual([0, 1]);
  });

  test("above ceil(P/R): releases one partition, only once the membership is stable", () => {
    const owners = ["a", "a", "a", "a"];
    const unstable = given({ me: "a", members: ["a", "b", "c"], owners, stable: false });
    expect(decideClaims(unstable)).toEqual([]);
    const stable = given({ me: "a", members: ["a", "b", "c"], owners });
    expect(released(decideClaims(stable))).toHaveLength(1);
  });

  test("no second release while a released partition is still free", () => {
    const view = given({ me: "a", members: ["a", "b", "c"], owners: ["a", "a", "a", undefined] });
    expect(decideClaims(view)).toEqual([]);
  });

  test("at ceil with someone starved: only the largest holder (lowest id on ties) releases", () => {
    const owners = ["a", "a", "b", "b"];
    expect(released(decideClaims(given({ me: "a", members: ["a", "b", "c"], owners })))).toEqual([
      1,
    ]);
    expect(decideClaims(given({ me: "b", members: ["a", "b", "c"], owners }))).toEqual([]);
  });

  test("a fair share is left alone", () => {
    for (const me of ["a", "b", "c"]) {
      const view = given({ me, members: ["a", "b", "c"], owners: ["a", "b", "c", "a"] });
      expect(decideClaims(view)).toEqual([]);
    }
  });

  test("from one holder of 4 and two newcomers: everyone ends with 1 or 2, no flapping", () => {
    const { owners } = settle(["a", "b", "c"], ["a", "a", "a", "a"]);
    const counts = ["a", "b", "c"].map((m) => owners.filter((o) => o === m).length);
    expect(counts.every((n) => n === 1 || n === 2)).toBe(true);
    expect(owners.every((o) => o !== undefined)).toBe(true);
    // Settled: another pass moves nothing.
    expect(settle(["a", "b", "c"], owners).moves).toBe(0);
  });

  test("16 partitions over 5 members settle at 3 or 4 each", () => {
    const members = ["m1", "m2", "m3", "m4", "m5"];
    const { owners } = settle(members, Array<string | undefined>(16).fill("m1"));
    const counts = members.map((m) => owners.filter((o) => o === m).length);
    expect(counts.every((n) => n === 3 || n === 4)).toBe(true);
  });

  test("only wanted partitions are claimed", () => {
    const view = {
      ...given({ me: "a", members: ["a"], owners: Array<string | undefined>(4).fill(undefined) }),
      wanted: new Set([2]),
    };
    expect(claimed(decideClaims(view))).toEqual([2]);
  });

  test("following: free partitions it holds in the followed group are claimed first", () => {
    const view: ClaimsView = {
      ...given({
        me: "a",
        members: ["a", "b"],
        owners: Array<string | undefined>(4).fill(undefined),
      }),
      follow: {
        mine: new Set([1, 3]),
        owners: new Map([
          [1, "a"],
          [3, "a"],
          [0, "b"],
          [2, "b"],
        ]),
      },
    };
    expect(claimed(decideClaims(view)).sort()).toEqual([1, 3]);
  });

  test("following: a partition whose followed holder does not compete here is kept", () => {
    const view: ClaimsView = {
      ...given({ me: "a", members: ["a"], owners: ["a", "a"] }),
      follow: {
        mine: new Set(),
        owners: new Map([
          [0, "x"],
          [1, "x"],
        ]),
      },
    };
    expect(decideClaims(view)).toEqual([]);
  });

  for (const [name, leaders, start] of [
    ["two members swapped", ["a", "a", "b", "b"], ["b", "b", "a", "a"]],
    [
      "three members, 16 partitions, one holding all",
      Array.from({ length: 16 }, (_, p) => ["a", "b", "c"][p % 3] as string),
      Array<string>(16).fill("a"),
    ],
    [
      "three members, 8 partitions, crosswise",
      ["a", "b", "c", "a", "b", "c", "a", "b"],
      ["c", "a", "b", "c", "a", "b", "c", "a"],
    ],
  ] as const) {
    test(`following: ${name} end with each partition held by its followed holder`, () => {
      const members = ["a", "b", "c"].filter((m) => leaders.includes(m as never));
      const owners: (string | undefined)[] = [...start];
      const sitOut = new Set<string>();
      for (let round = 0; round < 100; round++) {
        let moved = false;
        for (const me of members) {
          const base = given({ me, members, owners });
          const view: ClaimsView = {
            ...base,
            wanted: new Set([...base.wanted].filter((p) => !sitOut.has(`${me}.${p}`))),
            follow: {
              mine: new Set(leaders.flatMap((l, p) => (l === me ? [p] : []))),
              owners: new Map(leaders.map((l, p) => [p, l])),
            },
          };
          for (const action of decideClaims(view)) {
            moved = true;
            owners[action.partition] = action.kind === "claim" ? me : undefined;
            if (action.kind === "handover") sitOut.add(`${me}.${action.partition}`);
          }
        }
        if (!moved) break;
      }
      expect(owners).toEqual([...leaders]);
    });
  }
});

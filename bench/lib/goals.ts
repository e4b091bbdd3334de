/**
 * The benchmark's goals (issue 14, item 6; ingress ÷ ceiling and GET from issue 9; callback ÷
 * executor from issue 31) as ratios of
 * figures measured in the same run, each met, missed, or not measured (a peer or scenario left
 * out). Pure, so the arithmetic is tested apart from the machine.
 *
 * Beside the hub's value each goal it shares shows the JetStream floor's (bench/peer/floor-*.ts:
 * the least work a job can cost on the hub's stack). A goal the floor misses is out of reach for
 * any hub on this stack, since the hub does the floor's work and more: that is issue 14's "show
 * the measurement that proves it".
 *
 * The split floor (the floor's work split along the hub's fixed service boundaries: an HTTP
 * server, an executor, a callback step and a views fold as processes of their own) is shown
 * beside the ratio goals too, beside callback ÷ executor (its own two steps: the floor has one
 * process) and beside idle. A goal the floor meets and the split floor misses is out of reach
 * for the architecture the hub must have, though not for every system on this stack.
 *
 * The feed floor (the split floor whose views fold every event of a job from one ack-all durable,
 * as the hub's read models do: the hub's JetStream work per job, five deliveries and two acks) is
 * shown beside the ratio goals as well. A goal the split floor meets and the feed floor misses is
 * out of reach for the hub's delivery layout: a job view that shows each status and the
 * callback's state needs every event of the job delivered to the read models.
 */

export interface PerSystem {
  readonly hub?: number;
  /** BullMQ on Bun with Bun's Redis client: the stronger reference. */
  readonly bullmq?: number;
  /** BullMQ on Node with ioredis, as BullMQ's users run it. */
  readonly bullmqNode?: number;
  readonly pg?: number;
  readonly floor?: number;
  readonly floorSplit?: number;
  readonly floorFeed?: number;
}

export interface GoalInputs {
  /** Closed-loop e2e completed jobs per second. */
  readonly e2eDonePerSec: PerSystem;
  /** Closed-loop e2e jobs per CPU-second of each whole system (phase incl. drain). */
  readonly e2eJobsPerCpuSec: PerSystem;
  readonly postPerSec: PerSystem;
  /**
   * The hub's POST /run with its search index off, measured in the same run: beside the POST
   * goals, what the index's writes cost them.
   */
  readonly postWithoutIndexPerSec?: number;
  readonly getPerSec: PerSystem;
  readonly ingressToCeiling?: number;
  /** p99 submit → verified callback in the open loop, ms. */
  readonly p99CallbackAtRateMs?: number;
  readonly rate: number;
  /** Hub CPU per completed job (all hub processes, phase incl. drain), µs. */
  readonly hubCpuPerJobUs: { readonly rate?: number; readonly closed?: number };
  /** Busy cores of the whole hub (nats-server + services) over a quiet window. */
  readonly idleHubCores?: number;
  /**
   * Busy cores of each floor over the same window: connected processes with their consumers and
   * no leases, the least the hub's stack (the JetStream floor) and its service split (the split
   * floor) idle at.
   */
  readonly idleFloorCores?: { readonly floor?: number; readonly floorSplit?: number };
  /** Peak RSS of each hub service, MB. */
  readonly serviceRssPeakMb: Readonly<Record<string, number>>;
  /**
   * CPU per job of the callback step and of the executor in the e2e closed loop (issue 31: the
   * callback service at most the executor's): the hub's services, and the split floor's
   * processes of the same names, which do the least each step can on the hub's stack.
   */
  readonly callbackAndExecutorUs?: {
    readonly hub?: StepCosts;
    readonly floorSplit?: StepCosts;
  };
  /** The JetStream floor's figures for the goals that are not ratios to a peer. */
  readonly floor?: {
    readonly p99CallbackAtRateMs?: number;
    readonly cpuPerJobUs: { readonly rate?: number; readonly closed?: number };
  };
}

/** CPU µs per job of two steps of one system. */
export interface StepCosts {
  readonly callback: number;
  readonly executor: number;
}

/** The floor's own figure for a goal: the bound on what any hub on this stack can reach. */
export interface FloorFigure {
  readonly value: string;
  readonly met: boolean | null;
}

export interface GoalRow {
  readonly goal: string;
  readonly value: string;
  readonly target: string;
  /** null: not measured in this run. */
  readonly met: boolean | null;
  /** The JetStream floor against the same target, where the goal applies to it. */
  readonly floor?: FloorFigure;
  /** The split floor against the same target (ratio goals only). */
  readonly floorSplit?: FloorFigure;
  /** The feed floor against the same target (ratio goals only). */
  readonly floorFeed?: FloorFigure;
  /** The hub without its search index against the same target (the POST goals). */
  readonly withoutIndex?: FloorFigure;
}

const known = (n: number | undefined): n is number => n !== undefined && Number.isFinite(n);

export function fmtNum(n: number | undefined, digits = 0): string {
  if (!known(n)) return "–";
  return n.toLocaleString("en-US", {
    maximumFractionDigits: digits,
    minimumFractionDigits: digits,
  });
}

interface Compared {
  readonly value: string;
  readonly met: boolean | null;
}

function ratioOf(
  a: number | undefined,
  b: number | undefined,
  min: number,
  unit: string,
): Compared {
  if (!known(a) || !known(b) || b === 0) return { value: "–", met: null };
  const r = a / b;
  return { value: `${fmtNum(r, 2)} (${fmtNum(a)} vs ${fmtNum(b)}${unit})`, met: r >= min };
}

/** The hub's figure against a peer's, and each floor's against the same peer. */
function ratioRow(
  goal: string,
  figures: {
    readonly hub?: number;
    readonly peer?: number;
    readonly floor?: number;
    readonly floorSplit?: number;
    readonly floorFeed?: number;
  },
  target: { readonly min: number; readonly unit: string },
): GoalRow {
  const { min, unit } = target;
  const hub = ratioOf(figures.hub, figures.peer, min, unit);
  return {
    goal,
    ...hub,
    target: `≥ ${fmtNum(min, 2)}`,
    ...(known(figures.floor) ? { floor: ratioOf(figures.floor, figures.peer, min, unit) } : {}),
    ...(known(figures.floorSplit)
      ? { floorSplit: ratioOf(figures.floorSplit, figures.peer, min, unit) }
      : {}),
    ...(known(figures.floorFeed)
      ? { floorFeed: ratioOf(figures.floorFeed, figures.peer, min, unit) }
      : {}),
  };
}

function below(value: number | undefined, max: number, unit: string): Compared {
  if (!known(value)) return { value: "–", met: null };
  return { value: `${fmtNum(value, max < 1 ? 3 : 1)}${unit}`, met: value < max };
}

function maxRow(
  goal: string,
  figures: { readonly hub?: number; readonly floor?: number; readonly floorSplit?: number },
  max: number,
  unit: string,
): GoalRow {
  return {
    goal,
    ...below(figures.hub, max, unit),
    target: `< ${fmtNum(max, max < 1 ? 3 : 1)}${unit}`,
    ...(known(figures.floor) ? { floor: below(figures.floor, max, unit) } : {}),
    ...(known(figures.floorSplit) ? { floorSplit: below(figures.floorSplit, max, unit) } : {}),
  };
}

/** CPU per job in the open loop ÷ the closed loop's, at most `max`. */
function cpuRatio(
  cpu: { readonly rate?: number; readonly closed?: number },
  max: number,
): Compared {
  const { rate, closed } = cpu;
  if (!known(rate) || !known(closed) || closed <= 0) return { value: "–", met: null };
  return {
    value: `${fmtNum(rate / closed, 2)} (${fmtNum(rate)} vs ${fmtNum(closed)} µs)`,
    met: rate / closed <= max,
  };
}

/** The callback step's CPU per job ÷ the executor's, at most 1. */
function callbackRatio(steps: StepCosts | undefined): Compared {
  if (!steps || !known(steps.callback) || !known(steps.executor) || steps.executor <= 0)
    return { value: "–", met: null };
  const r = steps.callback / steps.executor;
  return {
    value: `${fmtNum(r, 2)} (${fmtNum(steps.callback)} vs ${fmtNum(steps.executor)} µs)`,
    met: r <= 1,
  };
}

function callbackRow(steps: GoalInputs["callbackAndExecutorUs"]): GoalRow {
  const split = callbackRatio(steps?.floorSplit);
  return {
    goal: "callback CPU per job ÷ executor's",
    ...callbackRatio(steps?.hub),
    target: "≤ 1.00",
    ...(split.met !== null ? { floorSplit: split } : {}),
  };
}

export function evaluateGoals(i: GoalInputs): GoalRow[] {
  const peerRatio = (
    goal: string,
    of: PerSystem,
    peer: "bullmq" | "bullmqNode" | "pg",
    min: number,
    unit = "",
  ) =>
    ratioRow(
      goal,
      {
        hub: of.hub,
        peer: of[peer],
        floor: of.floor,
        floorSplit: of.floorSplit,
        floorFeed: of.floorFeed,
      },
      { min, unit },
    );
  const postRow = (goal: string, peer: "bullmq" | "bullmqNode", min: number): GoalRow => {
    const row = peerRatio(goal, i.postPerSec, peer, min, "/s");
    const without = ratioOf(i.postWithoutIndexPerSec, i.postPerSec[peer], min, "/s");
    return without.met === null ? row : { ...row, withoutIndex: without };
  };
  const rows: GoalRow[] = [
    peerRatio("e2e done/s ÷ BullMQ on Node", i.e2eDonePerSec, "bullmqNode", 1, "/s"),
    peerRatio("e2e jobs per CPU-second ÷ BullMQ on Node", i.e2eJobsPerCpuSec, "bullmqNode", 1),
    postRow("POST /run ÷ BullMQ on Node", "bullmqNode", 0.8),
    peerRatio("e2e done/s ÷ BullMQ", i.e2eDonePerSec, "bullmq", 1, "/s"),
    peerRatio("e2e done/s ÷ PostgreSQL peer", i.e2eDonePerSec, "pg", 2, "/s"),
    peerRatio("e2e jobs per CPU-second ÷ BullMQ", i.e2eJobsPerCpuSec, "bullmq", 1),
    postRow("POST /run ÷ BullMQ", "bullmq", 1),
    peerRatio("GET /jobs ÷ BullMQ", i.getPerSec, "bullmq", 1.5, "/s"),
    i.ingressToCeiling === undefined
      ? { goal: "ingress ÷ ceiling", value: "–", target: "≥ 0.80", met: null }
      : {
          goal: "ingress ÷ ceiling",
          value: fmtNum(i.ingressToCeiling, 2),
          target: "≥ 0.80",
          met: i.ingressToCeiling >= 0.8,
        },
    maxRow(
      `p99 submit → callback at ${i.rate} jobs/s`,
      { hub: i.p99CallbackAtRateMs, floor: i.floor?.p99CallbackAtRateMs },
      20,
      " ms",
    ),
  ];
  const floorCpu = i.floor ? cpuRatio(i.floor.cpuPerJobUs, 1.5) : undefined;
  rows.push({
    goal: `hub CPU per job at ${i.rate}/s ÷ closed loop`,
    ...cpuRatio(i.hubCpuPerJobUs, 1.5),
    target: "≤ 1.50",
    ...(floorCpu && floorCpu.met !== null ? { floor: floorCpu } : {}),
  });
  rows.push(callbackRow(i.callbackAndExecutorUs));
  rows.push(
    maxRow(
      "idle CPU of the whole hub",
      { hub: i.idleHubCores, ...i.idleFloorCores },
      0.01,
      " cores",
    ),
  );
  const rss = Object.entries(i.serviceRssPeakMb).filter(([, mb]) => known(mb));
  if (rss.length === 0) {
    rows.push({ goal: "RSS of every service at peak", value: "–", target: "< 150 MB", met: null });
  } else {
    const [name, mb] = rss.reduce((a, b) => (b[1] > a[1] ? b : a));
    rows.push({
      goal: "RSS of every service at peak",
      value: `largest ${name} ${fmtNum(mb)} MB (${rss.map(([n, m]) => `${n} ${fmtNum(m)}`).join(", ")})`,
      target: "< 150 MB",
      met: mb < 150,
    });
  }
  return rows;
}

/**
 * A goal's status. A missed goal the floor misses too is out of reach on this stack; one the split
 * floor misses is out of reach for the hub's service split; one only the feed floor misses is out
 * of reach for the hub's delivery layout.
 */
export function status(
  row: Pick<GoalRow, "met" | "floor" | "floorSplit" | "floorFeed" | "withoutIndex">,
): string {
  if (row.met === null) return "not measured";
  if (row.met) return "met";
  if (row.floor?.met === false) return "missed; out of reach (the floor misses too)";
  if (row.floorSplit?.met === false)
    return "missed; out of reach for the service split (the split floor misses too)";
  if (row.floorFeed?.met === false)
    return "missed; out of reach for the hub's deliveries (the feed floor misses too)";
  if (row.withoutIndex?.met === true)
    return `missed; the search index's writes (met without them: ${row.withoutIndex.value.split(" ")[0]})`;
  return "missed";
}

/** The partitions goals (issue 27): figures of the whole hub at each partition count P of one run. */
export interface PartitionGoalInputs {
  /** Hub CPU µs per completed job in the e2e closed loop (phase and its drain), by P. */
  readonly cpuUsPerJob: Readonly<Record<number, number>>;
  /** Busy cores of the whole hub (nats-server + services) over a quiet window, by P. */
  readonly idleCores: Readonly<Record<number, number>>;
  /**
   * The JetStream floor's CPU µs per job in the same closed loop, by P: its work spread over P
   * streams and view buckets (bench/lib/partitions.ts). The bound on the CPU ratio: what the floor
   * cannot keep within the target, no hub on this stack can.
   */
  readonly floorCpuUsPerJob?: Readonly<Record<number, number>>;
  /** The split floor's, likewise: the bound for the hub's service split. */
  readonly floorSplitCpuUsPerJob?: Readonly<Record<number, number>>;
}

/** Most CPU per job P = 8 may cost against P = 1, and most idle cores at P = 16. */
export const PARTITION_TARGETS = { cpuRatio: 1.1, idleCoresAt16: 0.02 } as const;

/** CPU per job at P = 8 ÷ at P = 1 against the target; not measured without both. */
function partitionCpuRatio(byP: Readonly<Record<number, number>> | undefined): Compared {
  const one = byP?.[1];
  const eight = byP?.[8];
  if (!known(one) || !known(eight) || one <= 0) return { value: "–", met: null };
  return {
    value: `${fmtNum(eight / one, 2)} (${fmtNum(eight)} vs ${fmtNum(one)} µs)`,
    met: eight / one <= PARTITION_TARGETS.cpuRatio,
  };
}

export function evaluatePartitionGoals(i: PartitionGoalInputs): GoalRow[] {
  const floor = partitionCpuRatio(i.floorCpuUsPerJob);
  const floorSplit = partitionCpuRatio(i.floorSplitCpuUsPerJob);
  const idle16 = i.idleCores[16];
  const idle1 = i.idleCores[1];
  const idle: Compared = known(idle16)
    ? {
        value: `${fmtNum(idle16, 3)} cores${known(idle1) ? ` (P = 1: ${fmtNum(idle1, 3)})` : ""}`,
        met: idle16 <= PARTITION_TARGETS.idleCoresAt16,
      }
    : { value: "–", met: null };
  return [
    {
      goal: "hub CPU per job, P = 8 ÷ P = 1",
      ...partitionCpuRatio(i.cpuUsPerJob),
      target: `≤ ${fmtNum(PARTITION_TARGETS.cpuRatio, 2)}`,
      ...(floor.met === null ? {} : { floor }),
      ...(floorSplit.met === null ? {} : { floorSplit }),
    },
    {
      goal: "idle CPU of the whole hub at P = 16",
      ...idle,
      target: `≤ ${fmtNum(PARTITION_TARGETS.idleCoresAt16, 3)} cores`,
    },
  ];
}

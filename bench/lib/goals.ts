/**
 * The benchmark's goals (issue 14, item 6; ingress ÷ ceiling and GET from issue 9) as ratios of
 * figures measured in the same run, each met, missed, or not measured (a peer or scenario left
 * out). Pure, so the arithmetic is tested apart from the machine.
 */

export interface PerSystem {
  readonly hub?: number;
  readonly bullmq?: number;
  readonly pg?: number;
}

export interface GoalInputs {
  /** Closed-loop e2e completed jobs per second. */
  readonly e2eDonePerSec: PerSystem;
  /** Closed-loop e2e jobs per CPU-second of each whole system (phase incl. drain). */
  readonly e2eJobsPerCpuSec: PerSystem;
  readonly postPerSec: PerSystem;
  readonly getPerSec: PerSystem;
  readonly ingressToCeiling?: number;
  /** p99 submit → verified callback in the open loop, ms. */
  readonly p99CallbackAtRateMs?: number;
  readonly rate: number;
  /** Hub CPU per completed job (all hub processes, phase incl. drain), µs. */
  readonly hubCpuPerJobUs: { readonly rate?: number; readonly closed?: number };
  /** Busy cores of the whole hub (nats-server + services) over a quiet window. */
  readonly idleHubCores?: number;
  /** Peak RSS of each hub service, MB. */
  readonly serviceRssPeakMb: Readonly<Record<string, number>>;
}

export interface GoalRow {
  readonly goal: string;
  readonly value: string;
  readonly target: string;
  /** null: not measured in this run. */
  readonly met: boolean | null;
}

const known = (n: number | undefined): n is number => n !== undefined && Number.isFinite(n);

export function fmtNum(n: number | undefined, digits = 0): string {
  if (!known(n)) return "–";
  return n.toLocaleString("en-US", {
    maximumFractionDigits: digits,
    minimumFractionDigits: digits,
  });
}

function ratioRow(
  goal: string,
  a: number | undefined,
  b: number | undefined,
  min: number,
  unit: string,
): GoalRow {
  if (!known(a) || !known(b) || b === 0) {
    return { goal, value: "–", target: `≥ ${fmtNum(min, 2)}`, met: null };
  }
  const r = a / b;
  return {
    goal,
    value: `${fmtNum(r, 2)} (${fmtNum(a)} vs ${fmtNum(b)}${unit})`,
    target: `≥ ${fmtNum(min, 2)}`,
    met: r >= min,
  };
}

function maxRow(goal: string, value: number | undefined, max: number, unit: string): GoalRow {
  const digits = max < 1 ? 3 : 1;
  if (!known(value))
    return { goal, value: "–", target: `< ${fmtNum(max, digits)}${unit}`, met: null };
  return {
    goal,
    value: `${fmtNum(value, digits)}${unit}`,
    target: `< ${fmtNum(max, digits)}${unit}`,
    met: value < max,
  };
}

export function evaluateGoals(i: GoalInputs): GoalRow[] {
  const rows: GoalRow[] = [
    ratioRow("e2e done/s ÷ BullMQ", i.e2eDonePerSec.hub, i.e2eDonePerSec.bullmq, 1, "/s"),
    ratioRow("e2e done/s ÷ PostgreSQL peer", i.e2eDonePerSec.hub, i.e2eDonePerSec.pg, 2, "/s"),
    ratioRow(
      "e2e jobs per CPU-second ÷ BullMQ",
      i.e2eJobsPerCpuSec.hub,
      i.e2eJobsPerCpuSec.bullmq,
      1,
      "",
    ),
    ratioRow("POST /run ÷ BullMQ", i.postPerSec.hub, i.postPerSec.bullmq, 1, "/s"),
    ratioRow("GET /jobs ÷ BullMQ", i.getPerSec.hub, i.getPerSec.bullmq, 1.5, "/s"),
    i.ingressToCeiling === undefined
      ? { goal: "ingress ÷ ceiling", value: "–", target: "≥ 0.80", met: null }
      : {
          goal: "ingress ÷ ceiling",
          value: fmtNum(i.ingressToCeiling, 2),
          target: "≥ 0.80",
          met: i.ingressToCeiling >= 0.8,
        },
    maxRow(`p99 submit → callback at ${i.rate} jobs/s`, i.p99CallbackAtRateMs, 20, " ms"),
  ];
  const { rate, closed } = i.hubCpuPerJobUs;
  rows.push(
    known(rate) && known(closed) && closed > 0
      ? {
          goal: `hub CPU per job at ${i.rate}/s ÷ closed loop`,
          value: `${fmtNum(rate / closed, 2)} (${fmtNum(rate)} vs ${fmtNum(closed)} µs)`,
          target: "≤ 1.50",
          met: rate / closed <= 1.5,
        }
      : {
          goal: `hub CPU per job at ${i.rate}/s ÷ closed loop`,
          value: "–",
          target: "≤ 1.50",
          met: null,
        },
  );
  rows.push(maxRow("idle CPU of the whole hub", i.idleHubCores, 0.01, " cores"));
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

export function status(met: boolean | null): string {
  return met === null ? "not measured" : met ? "met" : "missed";
}

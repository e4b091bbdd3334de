/**
 * What each role's user may publish and subscribe to: the subjects and JetStream API calls its
 * service makes, for a hub of P partitions (docs/security.md, "NATS: credentials, TLS and one user
 * per role"). The admin may do everything and is written by render.ts.
 */
import { DISPATCH_BUCKET } from "../../../shared/dispatch/index.ts";
import { VIEW_NOTICE_SUBJECT_ROOT } from "../../../shared/jobs/index.ts";
import { CLAIMS_BUCKET, LEASE_BUCKET } from "../../../shared/lease/index.ts";
import {
  CALLBACK_QUEUE_STREAM,
  CALLBACK_QUEUE_SUBJECT_ROOT,
  CANCEL_QUEUE_STREAM,
  CANCEL_QUEUE_SUBJECT_ROOT,
  CANCEL_SUBJECT_ROOT,
  DEADLINE_STREAM,
  DEADLINE_SUBJECT_ROOT,
} from "../../../shared/schedule/index.ts";
import { TOOLSET_BUCKET, TOOLSET_OBJECTS } from "../../../shared/tools/index.ts";
import { TASK_STREAM, TASK_SUBJECT_ROOT } from "../../../shared/worker/index.ts";
import { RATE_BUCKET } from "../../ingress/index.ts";
import {
  API,
  CALLBACK,
  COMMON_READS,
  consumerCreate,
  durableDenies,
  EXECUTOR,
  eventGets,
  eventReaders,
  INDEX_CONSUMER,
  kv,
  kvReads,
  type Line,
  type Names,
  ownDurable,
  PROJECTOR,
  pulledDurable,
  readModelLease,
} from "./entries.ts";

/** A role's user: its publish allow (and deny) lists and what it subscribes to. */
export interface RoleBlock {
  readonly role:
    | "ingress"
    | "projector"
    | "indexer"
    | "read-models"
    | "executor"
    | "callback"
    | "worker"
    | "auditor";
  readonly comment: string;
  /** Written with its own comment: ephemeral readers only, never a hub durable by name. */
  readonly deny?: readonly Line[];
  readonly allow: readonly Line[];
  readonly subscribe: readonly string[];
  readonly subscribeComment?: string;
}

/** Pulling from and acking a work queue's consumers, whichever route or length they serve. */
const workQueue = (root: string, stream: string): string[] => [
  `${root}.>`,
  `${API}.CONSUMER.MSG.NEXT.${stream}.>`,
  `$JS.ACK.${stream}.>`,
];
const inbox = (role: RoleBlock["role"]) => `_INBOX_${role}.>`;

function ingress(n: Names): RoleBlock {
  return {
    role: "ingress",
    comment:
      "POST /run and the client API, the operator API (served by the ingress process) and console.",
    deny: durableDenies(n),
    allow: [
      ...COMMON_READS,
      "run.requested, cancels (job), retries (ops), callback redelivery requests (cb)",
      ...n.eventKinds(["run", "job", "ops", "cb"]),
      [`${CANCEL_SUBJECT_ROOT}.>`, `${CANCEL_QUEUE_SUBJECT_ROOT}.>`],
      "reading job views, the events of one job, and the shared rate limit",
      ...n.each((p) => [kvReads(n.layout.viewBucket(p))]),
      ...eventGets(n),
      ...n.each((p) => [consumerCreate(n.layout.stream(p))]),
      [`$KV.${RATE_BUCKET}.>`, ...kvReads(RATE_BUCKET)],
      "console logouts; the job-id and console keys are made by setup, only read here",
      ["$KV.sy_meta.console_logout.>"],
    ],
    subscribeComment: `${VIEW_NOTICE_SUBJECT_ROOT}.>: the projector's notices of a settled view rewritten (drop the cached copy)`,
    subscribe: [inbox("ingress"), `${VIEW_NOTICE_SUBJECT_ROOT}.>`],
  };
}

function projector(n: Names): RoleBlock {
  return {
    role: "projector",
    comment:
      "Folds events into job views (KV sy_jobs), holds the projector lease, appends checkpoints.",
    deny: durableDenies(n, [PROJECTOR]),
    allow: [
      ...COMMON_READS,
      ...ownDurable(n, PROJECTOR),
      ...n.each((p) => [[`$KV.${n.layout.viewBucket(p)}.>`, ...kvReads(n.layout.viewBucket(p))]]),
      ...readModelLease(PROJECTOR),
      "the signed checkpoints of the audit chain: the last one, and the events since (a reader)",
      ...n.each((p) => [[n.layout.checkpointSubject(p)]]),
      ...eventGets(n),
      ...eventReaders(n),
      "a settled view rewritten (a retry, a redelivery request): every ingress drops its copy",
      [`${VIEW_NOTICE_SUBJECT_ROOT}.>`],
    ],
    subscribe: [inbox("projector")],
  };
}

function indexer(n: Names): RoleBlock {
  return {
    role: "indexer",
    comment: "Reads the events stream into the search index (PostgreSQL or SQLite).",
    allow: [
      ...COMMON_READS,
      ...ownDurable(n, INDEX_CONSUMER),
      "a job's whole history, read again after a redelivery, and its run.requested (the creation time that keys its row)",
      ...eventGets(n),
      ...readModelLease("indexer"),
    ],
    subscribe: [inbox("indexer")],
  };
}

/**
 * The projector and the indexer in one process (`switchyard serve projector indexer`, one NATS
 * connection): the union of the two roles, each entry once, so the process may do what either
 * does and nothing neither may. Both durables are its own: it pulls, deletes and recreates each
 * (the index may be fed from the projector's durable while the `index` durable is deleted).
 */
function readModels(n: Names): RoleBlock {
  return {
    role: "read-models",
    comment:
      "The projector and the indexer in one process (switchyard serve projector indexer): both roles, no more.",
    deny: durableDenies(n, [PROJECTOR, INDEX_CONSUMER]),
    allow: unionOf([
      projector(n).allow,
      [
        "the indexer's, beyond the projector's: its durable `index` and its lease",
        ...indexer(n).allow.filter((line) => typeof line !== "string"),
      ],
    ]),
    subscribe: [inbox("read-models")],
  };
}

/**
 * Allow lists joined, each entry once. A comment is written before the first line after it that
 * keeps an entry: one whose lines all came before is left out.
 */
function unionOf(lists: readonly (readonly Line[])[]): Line[] {
  const seen = new Set<string>();
  const out: Line[] = [];
  let comment: string | undefined;
  for (const line of lists.flat()) {
    if (typeof line === "string") {
      comment = line;
      continue;
    }
    const fresh = line.filter((entry) => !seen.has(entry));
    if (fresh.length === 0) continue;
    for (const entry of fresh) seen.add(entry);
    if (comment !== undefined) out.push(comment);
    comment = undefined;
    out.push(fresh);
  }
  return out;
}

function executor(n: Names): RoleBlock {
  const objects = `OBJ_${TOOLSET_OBJECTS}`;
  return {
    role: "executor",
    comment:
      "Admits runs, dispatches tasks (builtin, HTTP, NATS work queue), appends job status events.",
    allow: [
      ...COMMON_READS,
      ...n.eventKinds(["job", "ops"]),
      ...pulledDurable(n, EXECUTOR),
      ...eventGets(n),
      workQueue(TASK_SUBJECT_ROOT, TASK_STREAM),
      workQueue(DEADLINE_SUBJECT_ROOT, DEADLINE_STREAM),
      workQueue(CANCEL_QUEUE_SUBJECT_ROOT, CANCEL_QUEUE_STREAM),
      [`${CANCEL_SUBJECT_ROOT}.>`],
      [`$KV.${DISPATCH_BUCKET}.>`, ...kvReads(DISPATCH_BUCKET)],
      kvReads(TOOLSET_BUCKET),
      [`${API}.DIRECT.GET.${objects}.>`, `${API}.STREAM.MSG.GET.${objects}`],
      consumerCreate(kv(TOOLSET_BUCKET)),
      consumerCreate(objects),
    ],
    subscribe: [inbox("executor"), `${CANCEL_SUBJECT_ROOT}.>`],
  };
}

function callback(n: Names): RoleBlock {
  return {
    role: "callback",
    comment: "Delivers completion callbacks; appends callback events (cb) only.",
    allow: [
      ...COMMON_READS,
      ...n.eventKinds(["cb"]),
      ...pulledDurable(n, CALLBACK),
      ...eventGets(n),
      workQueue(CALLBACK_QUEUE_SUBJECT_ROOT, CALLBACK_QUEUE_STREAM),
    ],
    subscribe: [inbox("callback")],
  };
}

function worker(n: Names): RoleBlock {
  const objects = `OBJ_${TOOLSET_OBJECTS}`;
  return {
    role: "worker",
    comment: "NATS workers (shared/worker, the SDK): pull tasks of the work queue, report status.",
    allow: [
      [`${API}.INFO`, `${API}.STREAM.INFO.${TASK_STREAM}`, `${API}.CONSUMER.INFO.${TASK_STREAM}.*`],
      workQueue(TASK_SUBJECT_ROOT, TASK_STREAM).slice(1),
      ...n.eventKinds(["job", "ops"]),
      ...eventGets(n),
      "tool sets too large to travel in the task",
      [`${API}.STREAM.INFO.${kv(TOOLSET_BUCKET)}`, `${API}.STREAM.INFO.${objects}`],
      kvReads(TOOLSET_BUCKET),
      [`${API}.DIRECT.GET.${objects}.>`, `${API}.STREAM.MSG.GET.${objects}`],
      consumerCreate(objects),
    ],
    subscribe: [inbox("worker"), `${CANCEL_SUBJECT_ROOT}.>`],
  };
}

function auditor(n: Names): RoleBlock {
  return {
    role: "auditor",
    comment:
      "Read-only: `switchyard events` and `audit verify` read the events stream and checkpoints.",
    deny: durableDenies(n),
    allow: [
      ...COMMON_READS,
      ...eventGets(n),
      ...eventReaders(n),
      ...n.each((p) => {
        const bucket = n.layout.viewBucket(p);
        return [
          kvReads(bucket),
          consumerCreate(kv(bucket)),
          [`${API}.CONSUMER.MSG.NEXT.${kv(bucket)}.*`],
        ];
      }),
      ...partitionHolders(),
    ],
    subscribe: [inbox("auditor")],
  };
}

/** Who holds each partition (`switchyard status`): the claims and member records. */
const partitionHolders = (): Line[] => [
  "who holds each partition (switchyard status): the claims and the member records",
  [...kvReads(CLAIMS_BUCKET), ...kvReads(LEASE_BUCKET)],
];

/** Every role but the admin, in the file's order. */
export function roleBlocks(n: Names): RoleBlock[] {
  return [ingress, projector, indexer, readModels, executor, callback, worker, auditor].map(
    (role) => role(n),
  );
}

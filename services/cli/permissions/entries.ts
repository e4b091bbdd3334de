/**
 * The pieces the roles' permissions are made of, named from the code that uses them (the event
 * layout, the topology and queue constants), for a hub of P partitions.
 *
 * NATS wildcards match whole tokens only: `SWITCHYARD_EVENTS_P0` is not matched by a pattern over
 * `SWITCHYARD_EVENTS`, and `sy.evt.p0.<client>.<job>.run` has one token more than
 * `sy.evt.<client>.<job>.run`. So every per-partition entry is written once per partition, which
 * also keeps each role to the streams the hub has.
 */
import { TOPOLOGY } from "../../../shared/bus/index.ts";
import type { EventLayout } from "../../../shared/jobs/index.ts";
import { CLAIMS_BUCKET, LEASE_BUCKET, memberKey } from "../../../shared/lease/index.ts";
import { INDEX_CONSUMER } from "../../indexer/index.ts";

/** One line of an allow or deny list: a comment, or entries. */
export type Line = string | readonly string[];

export const API = "$JS.API";
export const { projector: PROJECTOR, executor: EXECUTOR, callback: CALLBACK } = TOPOLOGY.consumers;
export { INDEX_CONSUMER };

/** The durables the admin makes on every events stream, one per consuming role. */
const HUB_DURABLES = [PROJECTOR, INDEX_CONSUMER, EXECUTOR, CALLBACK] as const;

/** A KV bucket's stream. */
export const kv = (bucket: string) => `KV_${bucket}`;

/** Single-message reads of a stream: direct gets (any replica) and the leader's get. */
export const streamGets = (stream: string): Line[] => [
  [`${API}.DIRECT.GET.${stream}`, `${API}.DIRECT.GET.${stream}.>`],
  [`${API}.STREAM.MSG.GET.${stream}`],
];

/** Key reads of a KV bucket. */
export const kvReads = (bucket: string): string[] => [
  `${API}.DIRECT.GET.${kv(bucket)}.>`,
  `${API}.STREAM.MSG.GET.${kv(bucket)}`,
];

/** Creating a consumer on a stream by subject: ephemeral readers, KV watches. */
export const consumerCreate = (stream: string): string[] => [
  `${API}.CONSUMER.CREATE.${stream}`,
  `${API}.CONSUMER.CREATE.${stream}.>`,
];

/** Reads every role makes: account, stream and consumer info and lists, the store's marks. */
export const COMMON_READS: readonly Line[] = [
  [`${API}.INFO`, `${API}.STREAM.INFO.*`, `${API}.STREAM.NAMES`, `${API}.STREAM.LIST`],
  [`${API}.CONSUMER.INFO.*.*`, `${API}.CONSUMER.LIST.*`, `${API}.CONSUMER.NAMES.*`],
  [`${API}.STREAM.MSG.GET.${kv(TOPOLOGY.metaBucket)}`],
];

/** The names of a hub of P partitions, and the lines that repeat once per partition. */
export interface Names {
  readonly layout: EventLayout;
  /** fn's lines for every partition, in partition order. */
  each(fn: (p: number) => readonly Line[]): Line[];
  /** Event subjects of the given kinds (run, job, cb, ops), one line per partition. */
  eventKinds(kinds: readonly string[]): Line[];
}

export function namesOf(layout: EventLayout): Names {
  const each = (fn: (p: number) => readonly Line[]) =>
    Array.from({ length: layout.partitions }, (_, p) => fn(p)).flat();
  return {
    layout,
    each,
    eventKinds: (kinds) => each((p) => [kinds.map((k) => `${layout.eventRoot(p)}.*.*.${k}`)]),
  };
}

/** Creating (or changing) a consumer by its durable name, with or without a filter subject. */
const durableCreate = (stream: string, durable: string): string[] => [
  `${API}.CONSUMER.CREATE.${stream}.${durable}`,
  `${API}.CONSUMER.CREATE.${stream}.${durable}.>`,
];

/**
 * nats-server 2.9 cannot tell ephemeral from durable creation by subject, and an ephemeral
 * reader's pulls go to a name it chose: deny creating, changing and pulling the hub's durables
 * (but `own`, the role's own durables: a deny would override their allow).
 */
export function durableDenies(n: Names, own: readonly string[] = []): Line[] {
  return HUB_DURABLES.filter((durable) => !own.includes(durable)).flatMap((durable) =>
    n.each((p) => {
      const stream = n.layout.stream(p);
      return [[...durableCreate(stream, durable), `${API}.CONSUMER.MSG.NEXT.${stream}.${durable}`]];
    }),
  );
}

/** A read model's own durable on every partition: pull, ack, and recreate it from its floor. */
export function ownDurable(n: Names, durable: string): Line[] {
  return n.each((p) => {
    const stream = n.layout.stream(p);
    return [
      [`${API}.CONSUMER.MSG.NEXT.${stream}.${durable}`, `$JS.ACK.${stream}.${durable}.>`],
      durableCreate(stream, durable),
      [
        `${API}.CONSUMER.DURABLE.CREATE.${stream}.${durable}`,
        `${API}.CONSUMER.DELETE.${stream}.${durable}`,
      ],
    ];
  });
}

/** Pulling from and acking a durable the admin made (no create, no delete), on every partition. */
export function pulledDurable(n: Names, durable: string): Line[] {
  return n.each((p) => [
    [
      `${API}.CONSUMER.MSG.NEXT.${n.layout.stream(p)}.${durable}`,
      `$JS.ACK.${n.layout.stream(p)}.${durable}.>`,
    ],
  ]);
}

/** Ephemeral (ordered) readers of every partition's stream: create, and pull by their own name. */
export const eventReaders = (n: Names): Line[] =>
  n.each((p) => [
    consumerCreate(n.layout.stream(p)),
    [`${API}.CONSUMER.MSG.NEXT.${n.layout.stream(p)}.*`],
  ]);

/** Reads of single events of every partition's stream (a job's history, the chain's head). */
export const eventGets = (n: Names): Line[] => n.each((p) => streamGets(n.layout.stream(p)));

/**
 * A read model's partition claims: its member record (shared with a co-located read model), its
 * own group's claims, the watches that follow both (and the deletion of their consumers), and
 * reads of the rebuild leases.
 */
export function readModelLease(group: string): Line[] {
  return [
    `its member record and its own partitions' claims (docs/architecture.md, "Partition claims")`,
    [`$KV.${LEASE_BUCKET}.${memberKey(">")}`, `$KV.${CLAIMS_BUCKET}.${group}.>`],
    kvReads(LEASE_BUCKET),
    kvReads(CLAIMS_BUCKET),
    consumerCreate(kv(LEASE_BUCKET)),
    consumerCreate(kv(CLAIMS_BUCKET)),
    "its two watches' consumers, deleted when it stops or nats.js re-creates one",
    [
      `${API}.CONSUMER.DELETE.${kv(LEASE_BUCKET)}.*`,
      `${API}.CONSUMER.DELETE.${kv(CLAIMS_BUCKET)}.*`,
    ],
  ];
}

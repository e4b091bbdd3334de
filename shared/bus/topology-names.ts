/** Names of everything the hub creates in JetStream. */
export const TOPOLOGY = {
  eventsStream: "SWITCHYARD_EVENTS",
  jobsBucket: "sy_jobs",
  metaBucket: "sy_meta",
  consumers: { projector: "projector", executor: "executor", callback: "callback" },
} as const;

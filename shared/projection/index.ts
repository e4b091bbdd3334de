export { AckFloor } from "./ack-floor.ts";
export {
  BACKLOG_COLLECT_EVERY_MS,
  BACKLOG_MAX_SHARE,
  BACKLOG_MIN_PENDING,
  type BacklogCollector,
  createBacklogCollector,
  createProcessBacklogCollector,
} from "./backlog-collector.ts";
export { decodeDelivery } from "./decoded.ts";
export { HeldJobs } from "./held.ts";
export {
  createHousekeeping,
  type Housekeeping,
  type HousekeepingTask,
  type HousekeepingTimers,
} from "./housekeeping.ts";
export { createRoundPacer, type RoundPacer, sharedRoundGapMs } from "./pacer.ts";
export * from "./read-model.ts";
export {
  ReadModelRunningError,
  type RebuildGroup,
  RebuildInterruptedError,
  type RebuildLease,
  takeRebuildLease,
} from "./rebuild-lease.ts";
export {
  createProjectionRunner,
  type ProjectionRunner,
  type ProjectionRunnerDeps,
} from "./runner.ts";
export {
  createSharedFeeds,
  type FeedHost,
  type Follower,
  type SharedFeeds,
  type UnfedReason,
} from "./shared-feed.ts";

import { JetStreamApiError } from "@nats-io/jetstream";

/**
 * JetStream API error codes the hub reacts to, by name (nats-server's errors.json). Code that
 * branches on a JetStream failure asks {@link isJsError} with one of these, never the message text.
 */
export const JsErrorCode = {
  /** JSStreamWrongLastSequenceErrF: an append's expected last subject sequence did not match. */
  wrongLastSequence: 10071,
  /** JSStreamNotFoundErr. */
  streamNotFound: 10059,
  /** JSStreamNameExistErr: another process created the stream first. */
  streamNameInUse: 10058,
  /** JSStreamSubjectOverlapErr: another stream takes the subjects (or is being created). */
  streamSubjectOverlap: 10065,
  /** JSConsumerNotFoundErr. */
  consumerNotFound: 10014,
  /** JSConsumerNameExistErr. */
  consumerNameInUse: 10013,
  /** JSConsumerAlreadyExists. */
  consumerExists: 10148,
  /** JSClusterNotAvailErr / JSStreamStoreFailedF: the store refused or failed the write. */
  clusterNotAvailable: 10008,
  storeFailed: 10077,
  /** JSInsufficientResourcesErr. */
  insufficientResources: 10023,
  /** JSStreamMaxBytesRequired / account or stream byte limits. */
  maxBytes: 10054,
  /** Account storage and memory limits (JSMemoryResourcesExceededErr, JSStorageResourcesExceededErr, …). */
  memoryResourcesExceeded: 10026,
  storageResourcesExceeded: 10027,
  maximumMessagesExceeded: 10028,
  streamLimitsExceeded: 10047,
  /**
   * JSStreamSequenceNotMatchErr: a new stream leader's clustered sequence did not match the
   * proposal (a leader change under load); nothing was stored.
   */
  streamSequenceNotMatch: 10063,
  /** JSClusterNotLeaderErr: the server asked is not (or no longer) the leader. */
  clusterNotLeader: 10009,
  /** JSNoMessageFoundErr: a get by sequence or subject found nothing. */
  noMessageFound: 10037,
} as const;

export type JsErrorName = keyof typeof JsErrorCode;

/** True when `err` is a JetStream API error with one of the named codes. */
export function isJsError(
  err: unknown,
  ...names: readonly JsErrorName[]
): err is JetStreamApiError {
  return err instanceof JetStreamApiError && names.some((name) => err.code === JsErrorCode[name]);
}

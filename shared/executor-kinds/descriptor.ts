import type { TSchema } from "@sinclair/typebox";

/** A config problem under a route's executor: the dotted key it is about, and what is wrong. */
export interface KindIssue {
  readonly key: string;
  readonly message: string;
}

/** Where a job's cancel is sent: one POST signed with `secret` (docs/executors.md, "Cancel"). */
export interface CancelRequestTarget {
  readonly url: string;
  readonly secret: string;
  readonly timeoutMs: number;
}

/** A limit of the executor config checked against NATS at start: the answer a job stores. */
export interface AnswerCap {
  /** The key under the route's executor that sets it, e.g. `max_response_bytes`. */
  readonly field: string;
  readonly bytes: number;
}

/** The `kind` every executor config carries. */
export interface KindedConfig {
  readonly kind: string;
}

/**
 * What an executor kind is and can do, as the whole hub sees it: its config, the checks the
 * schema cannot express, and its capabilities. The ingress, the operator's cancel, the config
 * loader and the runtime ask the kind; none of them names one. How a job of the kind runs is the
 * executor's part (services/executor/kinds). Methods say what the kind does for one route's
 * executor config; an absent method is a capability the kind does not have.
 */
export interface ExecutorKindDescriptor<C extends KindedConfig = KindedConfig> {
  /** The `kind` of `routes[].executor` this describes. */
  readonly name: C["kind"];
  /** TypeBox schema of `routes[].executor` for this kind; its `kind` is `Type.Literal(name)`. */
  readonly config: TSchema;
  /** Checks the schema cannot say; each issue's key starts with `key` (`routes[i].executor`). */
  check?(executor: C, key: string): KindIssue[];
  /** The signed cancel request to send once when a job of the route is cancelled; none: undefined. */
  cancelRequest?(executor: C): CancelRequestTarget | undefined;
  /** SHA-256 (hex) of the tokens that may report on the route's jobs (executor reports). */
  reportTokens?(executor: C): readonly string[];
  /** The largest answer a job of the route stores in one event, checked against max_payload. */
  answerCap?(executor: C): AnswerCap | undefined;
}

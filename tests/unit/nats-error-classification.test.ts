import { describe, expect, test } from "bun:test";
import { JetStreamApiError } from "@nats-io/jetstream";
import { NoRespondersError, TimeoutError } from "@nats-io/transport-node";
import { classifyNatsError } from "../../shared/bus/index.ts";

// What a failed publish becomes at the edge. Every answer nats-server 2.9.10 can give a publish
// while a stream leader changes must be "unavailable" (503, retry with the same request_id),
// never an unclassified error (a 500): the cluster test met these under a leader kill.

type ApiError = ConstructorParameters<typeof JetStreamApiError>[0];
const apiError = (code: number, err_code: number | undefined, description: string) =>
  // nats-server leaves err_code out of some answers, though nats.js's type requires it
  new JetStreamApiError({
    code,
    description,
    ...(err_code === undefined ? {} : { err_code }),
  } as ApiError);

describe("a publish that failed while a stream leader changed", () => {
  const cases: [string, Error][] = [
    // processClusteredInboundMsg: node.Propose failed; the server sets status 503 and no err_code
    [
      "a proposal refused by a raft node that lost leadership",
      apiError(503, undefined, "raft: not leader"),
    ],
    ["a proposal refused by a closing raft node", apiError(503, undefined, "raft: node is closed")],
    [
      "JSStreamSequenceNotMatchErr (10063)",
      apiError(503, 10063, "expected stream sequence does not match"),
    ],
    [
      "JSClusterNotAvailErr (10008)",
      apiError(503, 10008, "JetStream system temporarily unavailable"),
    ],
    [
      "JSClusterNotLeaderErr (10009)",
      apiError(500, 10009, "JetStream cluster can not handle request"),
    ],
    ["no responders", new NoRespondersError("sy.evt.acme.j1.run")],
    ["a timeout", new TimeoutError()],
  ];
  for (const [what, err] of cases) {
    test(`${what} → unavailable, 503 with Retry-After`, () => {
      const classified = classifyNatsError(err);
      expect(classified?.code).toBe("unavailable");
      expect(classified?.status).toBe(503);
      expect(classified?.headers?.["retry-after"]).toBe("2");
    });
  }
});

describe("answers that are not about availability", () => {
  test("a full stream (10077 naming the limit) is storage_full, not unavailable", () => {
    const full = apiError(503, 10077, "maximum bytes exceeded");
    expect(classifyNatsError(full)?.code).toBe("storage_full");
  });
  test("a request error the server meant (400, wrong last sequence) is left to the caller", () => {
    expect(classifyNatsError(apiError(400, 10071, "wrong last sequence: 3"))).toBeUndefined();
  });
  test("an error that is not from NATS is left to the caller", () => {
    expect(classifyNatsError(new TypeError("x is undefined"))).toBeUndefined();
  });
});

/**
 * POST /run with unusual `route` and `callback_url` values (tests/fuzz/string-fields.ts) against
 * the model of run-model.ts: every written-down fate once, then random combinations. Each answer
 * is the documented one (202, 400 naming the field, 403), never a 5xx, and nothing is stored for a
 * refusal.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { SecurityHub } from "../security/hub.ts";
import { createRunChecker, startRunFuzzHub } from "./run-check.ts";
import { CLIENTS } from "./run-model.ts";
import { FUZZ_SEED, fuzzRuns, fuzzTimeoutMs } from "./settings.ts";
import { callbackUrl, eachPartOnce, unusualRoute } from "./string-fields.ts";

let hub: SecurityHub;
const checker = createRunChecker(() => hub);

beforeAll(async () => {
  hub = await startRunFuzzHub();
});
afterAll(() => hub?.stop());

const { acme, globex } = CLIENTS;

/** A request whose only unusual fields are route and callback_url, from either client. */
const stringFieldsRequest = fc.record({
  client: fc.constantFrom(acme, globex),
  route: fc.oneof(fc.constantFrom("demo.echo", "billing.invoice"), unusualRoute),
  callback_url: fc.oneof({ weight: 4, arbitrary: callbackUrl }, fc.constant(undefined)),
});

describe(`route and callback_url (${fuzzRuns(400)} runs, seed ${FUZZ_SEED})`, () => {
  test(
    "unusual routes and callback URLs: the documented answer, naming the field",
    async () => {
      const codes = new Set<string>();
      let n = 0;
      const send = async (r: {
        client: { token: string };
        route: string;
        callback_url?: string;
      }) => {
        const headers = new Headers({
          authorization: `Bearer ${r.client.token}`,
          "content-type": "application/json",
        });
        const run = { request_id: `sf-${n++}`, route: r.route, input: "x" };
        const body = JSON.stringify(
          r.callback_url === undefined ? run : { ...run, callback_url: r.callback_url },
        );
        const got = await checker.sendAndCheck(headers, new TextEncoder().encode(body));
        codes.add(`${got.status}:${String(got.code ?? "")}`);
      };
      // Each written-down fate once (for the client with a signing secret), then combinations.
      for (const url of eachPartOnce())
        await send({ client: acme, route: "demo.echo", callback_url: url });
      await fc.assert(fc.asyncProperty(stringFieldsRequest, send), {
        seed: FUZZ_SEED,
        numRuns: fuzzRuns(400),
        endOnFailure: true,
      });
      await checker.expectOneEventPer202();
      expect([...codes].sort()).toEqual([
        "202:",
        "400:callback_url_refused",
        "400:invalid_request",
        "403:route_not_allowed",
      ]);
    },
    fuzzTimeoutMs(400),
  );
});

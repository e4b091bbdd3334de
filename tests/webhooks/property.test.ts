import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import {
  generateWebhookSecret,
  verifyWebhook,
  WebhookVerificationError,
  webhookHeaders,
} from "../../shared/webhooks/index.ts";

// Fixed seed: failures reproduce exactly; fast-check prints the counterexample.
const RUN = { seed: 20_251_105, numRuns: 200 };

const secretArb = fc.integer({ min: 24, max: 64 }).map((n) => generateWebhookSecret(n));
const idArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/);
const tsArb = fc.integer({ min: 1, max: 4_000_000_000 });

describe("sign → verify round trip (property)", () => {
  test("any body, id, timestamp and secret set verifies with every secret of the set", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 300 }),
        idArb,
        tsArb,
        fc.array(secretArb, { minLength: 1, maxLength: 3 }),
        fc.integer({ min: -300, max: 300 }),
        (body, id, timestamp, secrets, skew) => {
          const headers = webhookHeaders({ id, timestamp, body, secrets });
          const now = () => (timestamp + skew) * 1000;
          for (const secret of secrets) {
            expect(verifyWebhook(body, headers, [secret], { now })).toEqual({ id, timestamp });
          }
        },
      ),
      RUN,
    );
  });

  test("the reference library accepts what we sign, for arbitrary JSON bodies", () => {
    const nowSec = Math.floor(Date.now() / 1000);
    fc.assert(
      fc.property(fc.jsonValue(), idArb, secretArb, (value, id, secret) => {
        const body = JSON.stringify(value);
        const headers = webhookHeaders({ id, timestamp: nowSec, body, secrets: [secret] });
        expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
      }),
      { ...RUN, numRuns: 100 },
    );
  });

  test("any single-byte change to the body fails verification", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 200 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        secretArb,
        (bytes, position, flip, secret) => {
          const headers = webhookHeaders({
            id: "msg",
            timestamp: 1000,
            body: bytes,
            secrets: [secret],
          });
          const changed = Uint8Array.from(bytes);
          const index = position % changed.length;
          changed[index] = (changed[index] ?? 0) ^ flip;
          expect(() => verifyWebhook(changed, headers, [secret], { now: () => 1_000_000 })).toThrow(
            WebhookVerificationError,
          );
        },
      ),
      RUN,
    );
  });
});

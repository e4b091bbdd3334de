import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import {
  createSwitchyardClient,
  type JobCompletedEvent,
  newRequestId,
  verifyCallback,
  verifyWebhook,
  type WebhookVerificationCode,
  WebhookVerificationError,
} from "../../sdk/src/index.ts";
import { generateWebhookSecret, webhookHeaders } from "../../shared/webhooks/index.ts";
import { waitFor } from "../helpers/wait.ts";
import { type SdkHub, startReceiver, startSdkHub } from "./hub.ts";

const T = 1_760_000_000;
const now = () => T * 1000;
const secret = generateWebhookSecret();
const event: JobCompletedEvent = {
  type: "job.completed",
  timestamp: new Date(T * 1000).toISOString(),
  data: {
    job_id: "job_1",
    request_id: "r1",
    route: "demo",
    status: "done",
    output: { answer: 42 },
    created_at: "2025-10-09T08:00:00.000Z",
    completed_at: "2025-10-09T08:00:05.000Z",
  },
};
const body = JSON.stringify(event);
// Signed by the hub's own signer (shared/webhooks), as the callback service does.
const headers = webhookHeaders({ id: "msg_cb1", timestamp: T, body, secrets: [secret] });

function codeOf(run: () => unknown): WebhookVerificationCode | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.code;
    throw err;
  }
}

describe("verifyCallback", () => {
  test("returns the parsed event for a valid callback (string or bytes, any header form)", () => {
    expect(verifyCallback(body, headers, [secret], { now })).toEqual(event);
    const bytes = new TextEncoder().encode(body);
    expect(verifyCallback(bytes, new Headers(headers), [secret], { now }).data.job_id).toBe(
      "job_1",
    );
    const nodeStyle = { "Webhook-Id": headers["webhook-id"], ...headers, "webhook-id": undefined };
    expect(verifyWebhook(body, nodeStyle, [secret], { now })).toEqual({
      id: "msg_cb1",
      timestamp: T,
    });
  });

  test("accepts during rotation when any given secret matches", () => {
    expect(verifyCallback(body, headers, [generateWebhookSecret(), secret], { now }).type).toBe(
      "job.completed",
    );
  });

  test("agrees with the standardwebhooks reference implementation both ways", () => {
    const reference = new Webhook(secret);
    const signed = reference.sign("msg_ref", new Date(T * 1000), body);
    const refHeaders = {
      "webhook-id": "msg_ref",
      "webhook-timestamp": String(T),
      "webhook-signature": signed,
    };
    expect(verifyCallback(body, refHeaders, [secret], { now })).toEqual(event);
    const realNow = Math.floor(Date.now() / 1000);
    const ours = webhookHeaders({ id: "msg_x", timestamp: realNow, body, secrets: [secret] });
    expect(reference.verify(body, ours)).toEqual(event);
  });

  const { "webhook-signature": _omit, ...withoutSignature } = headers;
  test.each<[WebhookVerificationCode, () => unknown]>([
    ["missing_header", () => verifyCallback(body, withoutSignature, [secret], { now })],
    [
      "invalid_timestamp",
      () => verifyCallback(body, { ...headers, "webhook-timestamp": "soon" }, [secret], { now }),
    ],
    [
      "timestamp_too_old",
      () => verifyCallback(body, headers, [secret], { now: () => (T + 301) * 1000 }),
    ],
    [
      "timestamp_too_new",
      () => verifyCallback(body, headers, [secret], { now: () => (T - 301) * 1000 }),
    ],
    ["no_matching_signature", () => verifyCallback(`${body}\n`, headers, [secret], { now })],
    [
      "no_matching_signature",
      () => verifyCallback(body, headers, [generateWebhookSecret()], { now }),
    ],
    [
      "no_matching_signature",
      () => verifyCallback(body, { ...headers, "webhook-signature": "v1,***" }, [secret], { now }),
    ],
    ["invalid_secret", () => verifyCallback(body, headers, ["not-a-secret"], { now })],
    ["invalid_secret", () => verifyCallback(body, headers, ["whsec_c2hvcnQ="], { now })],
    ["invalid_secret", () => verifyCallback(body, headers, [], { now })],
  ])("fails with %s", (code, run) => {
    expect(codeOf(run)).toBe(code);
  });

  test("a narrower tolerance is honoured", () => {
    expect(
      codeOf(() =>
        verifyCallback(body, headers, [secret], { now: () => (T + 31) * 1000, toleranceSec: 30 }),
      ),
    ).toBe("timestamp_too_old");
  });

  test("a signed body that is not a JSON object is invalid_body", () => {
    const text = "not json";
    const h = webhookHeaders({ id: "msg_2", timestamp: T, body: text, secrets: [secret] });
    expect(codeOf(() => verifyCallback(text, h, [secret], { now }))).toBe("invalid_body");
  });
});

describe("a callback delivered by a real hub", () => {
  let sdk: SdkHub;
  const receiver = startReceiver();
  beforeAll(async () => {
    sdk = await startSdkHub();
  });
  afterAll(async () => {
    await sdk.stop();
    await receiver.stop();
  });

  test("verifies with either rotated secret, and fails with neither", async () => {
    const { token, secrets } = sdk.clients.acme;
    const client = createSwitchyardClient({ baseUrl: sdk.baseUrl, token });
    const { job } = await client.run({
      request_id: newRequestId(),
      route: "demo.echo",
      input: "ping",
      callback_url: receiver.url("/hook"),
    });
    const [delivered] = await waitFor(
      "the callback",
      () => receiver.on("/hook")[0] && receiver.on("/hook"),
    );
    if (!delivered) throw new Error("no callback");
    const [oldSecret = "", newSecret = ""] = secrets;
    for (const accepted of [[oldSecret], [newSecret], [generateWebhookSecret(), newSecret]]) {
      const verified = verifyCallback(delivered.body, delivered.headers, accepted);
      expect(verified.data).toMatchObject({ job_id: job.job_id, status: "done", output: "ping" });
    }
    expect(
      codeOf(() => verifyCallback(delivered.body, delivered.headers, [generateWebhookSecret()])),
    ).toBe("no_matching_signature");
    const sentAt = Number(delivered.headers["webhook-timestamp"]);
    const late = () => (sentAt + 301) * 1000;
    expect(
      codeOf(() => verifyCallback(delivered.body, delivered.headers, secrets, { now: late })),
    ).toBe("timestamp_too_old");
  });
});

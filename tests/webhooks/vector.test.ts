import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import {
  generateWebhookSecret,
  parseWebhookSecret,
  signWebhook,
  verifyWebhook,
  webhookHeaders,
} from "../../shared/webhooks/index.ts";

// Published Svix / Standard Webhooks vector. Its key is 18 bytes, below our 24-byte floor for
// issued secrets, so it is parsed with explicit bounds.
const VECTOR = {
  secret: "whsec_plJ3nmyCDGBKInavdOK15jsl",
  id: "msg_loFOjxBNrRLzqYUf",
  timestamp: 1731705121,
  body: '{"event_type":"ping","data":{"success":true}}',
  signature: "v1,rAvfW3dJ/X/qxhsaXPOyyCGmRKsaKWcsNccKXlIktD0=",
};

describe("Standard Webhooks test vector", () => {
  const secret = parseWebhookSecret(VECTOR.secret, { minBytes: 16 });

  test("signing reproduces the published signature", () => {
    expect(
      signWebhook({
        id: VECTOR.id,
        timestamp: VECTOR.timestamp,
        body: VECTOR.body,
        secrets: [secret],
      }),
    ).toBe(VECTOR.signature);
  });

  test("the published signature verifies, also from bytes", () => {
    const headers = {
      "webhook-id": VECTOR.id,
      "webhook-timestamp": String(VECTOR.timestamp),
      "webhook-signature": VECTOR.signature,
    };
    const now = () => VECTOR.timestamp * 1000 + 10_000;
    expect(verifyWebhook(VECTOR.body, headers, [secret], { now })).toEqual({
      id: VECTOR.id,
      timestamp: VECTOR.timestamp,
    });
    expect(() =>
      verifyWebhook(new TextEncoder().encode(VECTOR.body), new Headers(headers), [secret], { now }),
    ).not.toThrow();
  });
});

describe("interoperability with the standardwebhooks package", () => {
  const body = JSON.stringify({
    type: "job.completed",
    timestamp: new Date().toISOString(),
    data: {
      job_id: "j1",
      request_id: "r1",
      route: "demo",
      status: "done",
      output: { ok: "ünïcødé" },
    },
  });
  const nowSec = Math.floor(Date.now() / 1000);

  test("a signature with one secret verifies with the reference library", () => {
    const secret = generateWebhookSecret();
    const headers = webhookHeaders({ id: "msg_1", timestamp: nowSec, body, secrets: [secret] });
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });

  test("with two active secrets, the reference library accepts either", () => {
    const oldSecret = generateWebhookSecret(24);
    const newSecret = generateWebhookSecret(64);
    const headers = webhookHeaders({
      id: "msg_2",
      timestamp: nowSec,
      body,
      secrets: [oldSecret, newSecret],
    });
    expect(headers["webhook-signature"].split(" ")).toHaveLength(2);
    expect(new Webhook(oldSecret).verify(body, { ...headers })).toBeDefined();
    expect(new Webhook(newSecret).verify(body, { ...headers })).toBeDefined();
    expect(() => new Webhook(generateWebhookSecret()).verify(body, { ...headers })).toThrow();
  });

  test("reference library signatures verify with ours", () => {
    const secret = generateWebhookSecret();
    const signature = new Webhook(secret).sign("msg_3", new Date(nowSec * 1000), body);
    const headers = {
      "webhook-id": "msg_3",
      "webhook-timestamp": String(nowSec),
      "webhook-signature": signature,
    };
    expect(verifyWebhook(body, headers, [secret], { now: () => nowSec * 1000 }).id).toBe("msg_3");
  });

  test("webhookHeaders carries the User-Agent and content type", () => {
    const headers = webhookHeaders({
      id: "msg_4",
      timestamp: nowSec,
      body,
      secrets: [generateWebhookSecret()],
    });
    expect(headers["user-agent"]).toBe("Switchyard");
    expect(headers["content-type"]).toBe("application/json");
    expect(headers["webhook-timestamp"]).toBe(String(nowSec));
  });
});

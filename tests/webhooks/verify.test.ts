import { describe, expect, test } from "bun:test";
import {
  generateWebhookSecret,
  type HeaderSource,
  type VerifyOptions,
  verifyWebhook,
  type WebhookVerificationCode,
  WebhookVerificationError,
  webhookHeaders,
} from "../../shared/webhooks/index.ts";

const T = 1_750_000_000;
const clockAt = (sec: number) => () => sec * 1000;
const secret = generateWebhookSecret();
const body = '{"type":"job.completed","data":{"job_id":"j1"}}';
const headers = webhookHeaders({ id: "msg_v", timestamp: T, body, secrets: [secret] });

function failure(
  run: () => unknown,
): { code: WebhookVerificationCode; message: string } | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return { code: err.code, message: err.message };
    throw err;
  }
}

function codeOf(
  raw: string | Uint8Array,
  h: HeaderSource,
  secrets: readonly string[],
  options: VerifyOptions = { now: clockAt(T) },
): WebhookVerificationCode | undefined {
  return failure(() => verifyWebhook(raw, h, secrets, options))?.code;
}

describe("verifyWebhook", () => {
  test("accepts a fresh, correctly signed request", () => {
    expect(codeOf(body, headers, [secret])).toBeUndefined();
  });

  test("accepts header names in any case and node-style arrays", () => {
    const mixed = {
      "Webhook-Id": headers["webhook-id"],
      "WEBHOOK-TIMESTAMP": [headers["webhook-timestamp"]],
      "webhook-signature": headers["webhook-signature"],
    };
    expect(codeOf(body, mixed, [secret])).toBeUndefined();
  });

  test("accepts the edges of the tolerance window and rejects one second beyond", () => {
    expect(codeOf(body, headers, [secret], { now: clockAt(T + 300) })).toBeUndefined();
    expect(codeOf(body, headers, [secret], { now: clockAt(T - 300) })).toBeUndefined();
    expect(codeOf(body, headers, [secret], { now: clockAt(T + 301) })).toBe("timestamp_too_old");
    expect(codeOf(body, headers, [secret], { now: clockAt(T - 301) })).toBe("timestamp_too_new");
  });

  test("honours a custom tolerance", () => {
    const options = { now: clockAt(T + 61), toleranceSec: 60 };
    expect(codeOf(body, headers, [secret], options)).toBe("timestamp_too_old");
  });

  test("rejects a changed body", () => {
    expect(codeOf(body.replace("j1", "j2"), headers, [secret])).toBe("no_matching_signature");
    expect(codeOf(`${body} `, headers, [secret])).toBe("no_matching_signature");
  });

  test("rejects a wrong secret but accepts when a rotated-in secret matches", () => {
    const other = generateWebhookSecret();
    expect(codeOf(body, headers, [other])).toBe("no_matching_signature");
    expect(codeOf(body, headers, [other, secret])).toBeUndefined();
  });

  test("rejects a changed id or timestamp (both are signed)", () => {
    expect(codeOf(body, { ...headers, "webhook-id": "msg_other" }, [secret])).toBe(
      "no_matching_signature",
    );
    expect(codeOf(body, { ...headers, "webhook-timestamp": String(T + 1) }, [secret])).toBe(
      "no_matching_signature",
    );
  });

  test("ignores signatures of unknown versions and garbage entries", () => {
    const sig = headers["webhook-signature"];
    const noisy = { ...headers, "webhook-signature": `v2,abc v1,%%% ${sig} v1a,xyz` };
    expect(codeOf(body, noisy, [secret])).toBeUndefined();
    const onlyOther = { ...headers, "webhook-signature": sig.replace("v1,", "v2,") };
    expect(codeOf(body, onlyOther, [secret])).toBe("no_matching_signature");
  });

  test.each(["webhook-id", "webhook-timestamp", "webhook-signature"] as const)(
    "reports a missing %s",
    (name) => {
      const partial: Record<string, string> = { ...headers };
      delete partial[name];
      const result = failure(() => verifyWebhook(body, partial, [secret], { now: clockAt(T) }));
      expect(result?.code).toBe("missing_header");
      expect(result?.message).toContain(name);
      expect(codeOf(body, { ...headers, [name]: "  " }, [secret])).toBe("missing_header");
    },
  );

  test.each(["abc", "-5", "1.5", "1e9", "17500000000000000"])(
    "rejects the timestamp %p as invalid",
    (ts) => {
      expect(codeOf(body, { ...headers, "webhook-timestamp": ts }, [secret])).toBe(
        "invalid_timestamp",
      );
    },
  );

  test("reports unusable secrets as invalid_secret without echoing them", () => {
    expect(codeOf(body, headers, [])).toBe("invalid_secret");
    expect(codeOf(body, headers, ["plain"])).toBe("invalid_secret");
    const result = failure(() =>
      verifyWebhook(body, headers, [secret, "whsec_c2hvcnQ="], { now: clockAt(T) }),
    );
    expect(result?.code).toBe("invalid_secret");
    expect(result?.message).toContain("secret #2");
    expect(result?.message).not.toContain("c2hvcnQ");
  });

  test("checks the secret before the headers, so misconfiguration is never masked", () => {
    expect(codeOf(body, {}, ["nope"])).toBe("invalid_secret");
  });
});

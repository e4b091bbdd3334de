import { describe, expect, test } from "bun:test";
import {
  createWebhookSigner,
  generateWebhookSecret,
  parseWebhookSecret,
  signWebhook,
  WebhookSecretError,
  type WebhookSecretProblem,
  webhookHeaders,
} from "../../shared/webhooks/index.ts";

function problemOf(secret: string): WebhookSecretProblem | undefined {
  try {
    parseWebhookSecret(secret);
    return undefined;
  } catch (err) {
    if (err instanceof WebhookSecretError) return err.problem;
    throw err;
  }
}

const b64 = (bytes: number) => Buffer.alloc(bytes, 7).toString("base64");

describe("webhook secrets", () => {
  test("generated secrets parse back to the requested length", () => {
    for (const bytes of [24, 32, 64]) {
      const secret = generateWebhookSecret(bytes);
      expect(secret.startsWith("whsec_")).toBe(true);
      expect(parseWebhookSecret(secret).key).toHaveLength(bytes);
    }
    expect(generateWebhookSecret()).not.toBe(generateWebhookSecret());
  });

  test("generation refuses lengths outside 24–64", () => {
    expect(() => generateWebhookSecret(23)).toThrow(RangeError);
    expect(() => generateWebhookSecret(65)).toThrow(RangeError);
  });

  test.each([
    ["missing prefix", "prefix", b64(32)],
    ["wrong prefix", "prefix", `whsek_${b64(32)}`],
    ["base64url alphabet", "base64", `whsec_${"-_".repeat(16)}`],
    ["whitespace", "base64", `whsec_${b64(30)} `],
    ["impossible length", "base64", `whsec_${"A".repeat(33)}`],
    ["non-canonical trailing bits", "base64", "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB="],
    ["too short", "length", `whsec_${b64(23)}`],
    ["too long", "length", `whsec_${b64(65)}`],
    ["empty key", "base64", "whsec_"],
  ] as const)("%s is reported as %s", (_label, problem, secret) => {
    expect(problemOf(secret)).toBe(problem);
  });

  test("unpadded base64 is accepted", () => {
    expect(parseWebhookSecret(`whsec_${b64(25).replace(/=+$/, "")}`).key).toHaveLength(25);
  });

  test("error messages never contain the secret", () => {
    const secret = `whsec_${b64(10)}`;
    expect(() => parseWebhookSecret(secret)).toThrow(/24–64 bytes, got 10/);
    try {
      parseWebhookSecret(secret);
    } catch (err) {
      expect(String(err)).not.toContain(b64(10));
    }
  });

  test("signing refuses bad input", () => {
    const secret = generateWebhookSecret();
    expect(() => signWebhook({ id: "m", timestamp: 1, body: "", secrets: [] })).toThrow(TypeError);
    expect(() => signWebhook({ id: "", timestamp: 1, body: "", secrets: [secret] })).toThrow(
      TypeError,
    );
    expect(() => signWebhook({ id: "m", timestamp: 1.5, body: "", secrets: [secret] })).toThrow(
      TypeError,
    );
    expect(() => signWebhook({ id: "m", timestamp: 1, body: "", secrets: ["x"] })).toThrow(
      WebhookSecretError,
    );
  });
});

describe("createWebhookSigner", () => {
  test("signs exactly as webhookHeaders, through rotations, and refuses a bad secret every time", () => {
    const sign = createWebhookSigner({ maxSecrets: 1 });
    const a = generateWebhookSecret();
    const b = generateWebhookSecret(24);
    const input = { id: "msg_job_1", timestamp: 1_750_000_000, body: '{"x":1}' };
    for (const secrets of [[a], [a, b], [b], [a, b]]) {
      expect(sign({ ...input, secrets })).toEqual(webhookHeaders({ ...input, secrets }));
    }
    for (let i = 0; i < 2; i++) {
      expect(() => sign({ ...input, secrets: ["whsec_short"] })).toThrow(WebhookSecretError);
    }
  });
});

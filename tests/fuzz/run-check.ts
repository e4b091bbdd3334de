import { expect } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { type SecurityHub, startSecurityHub } from "../security/hub.ts";
import {
  type Accepted,
  CALLBACK_CLIENT,
  CLIENTS,
  clientOf,
  expectedAnswer,
  type SentRequest,
} from "./run-model.ts";

/** The hub the POST /run fuzz suites send to: the model's clients, acme with a signing secret. */
export function startRunFuzzHub(): Promise<SecurityHub> {
  return startSecurityHub({
    clients: Object.entries(CLIENTS).map(([id, c]) => ({ id, token: c.token, routes: c.routes })),
    // Bad tokens are part of the fuzz; the per-address failure limit is tested elsewhere.
    server: { auth_failures_per_minute: 1_000_000 },
    clientYaml: { [CALLBACK_CLIENT]: `callback_secrets: ["${generateWebhookSecret()}"]` },
  });
}

/** The top-level field a problem's JSON pointer points into ("" for the body itself). */
const topField = (pointer: string) =>
  (pointer.split("/")[1] ?? "").replace(/~1/g, "/").replace(/~0/g, "~");

/**
 * Sends requests to POST /run and checks each answer against the model (run-model.ts): status,
 * problem code, problem+json shape, and for a 400 that every error points into a field the model
 * finds at fault. Counts 202s and the status:code pairs seen.
 */
export function createRunChecker(hub: () => SecurityHub) {
  const accepted: Accepted = new Map();
  /** status:code pairs seen, to show that the generators reach every branch of the model. */
  const seen = new Set<string>();
  let created = 0;

  async function sendAndCheck(headers: Headers, bytes: Uint8Array) {
    const res = await fetch(`${hub().baseUrl}/run`, { method: "POST", headers, body: bytes });
    const sent: SentRequest = {
      authorization: headers.get("authorization"),
      contentType: headers.get("content-type"),
      body: bytes,
    };
    const want = expectedAnswer(sent, accepted);
    const raw = await res.text();
    expect(res.status).toBeLessThan(500);
    const got = { status: res.status, code: undefined as unknown };
    if (res.status >= 400) {
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      const problem = JSON.parse(raw) as Record<string, unknown>;
      expect(problem.status).toBe(res.status);
      expect(typeof problem.detail).toBe("string");
      got.code = problem.code;
      if (want.fields && problem.code === want.code) {
        // A 400 names where the problem is, and only fields the rules find at fault.
        const pointers = (problem.errors as { pointer: string }[]).map((e) => topField(e.pointer));
        expect(pointers.length).toBeGreaterThan(0);
        for (const field of pointers) expect(want.fields).toContain(field);
      }
    } else {
      const job = JSON.parse(raw) as { job_id: string; status: string };
      expect(job.job_id).toMatch(/^job_[A-Za-z0-9_-]{22}$/);
      expect(res.headers.get("location")).toBe(`/jobs/${job.job_id}`);
      if (res.status === 202) created++;
    }
    seen.add(`${res.status}:${String(got.code ?? "")}`);
    expect({ ...got, client: clientOf(sent.authorization) }).toEqual({
      status: want.status,
      code: want.code,
      client: clientOf(sent.authorization),
    });
    return got;
  }

  /** Nothing was persisted for a refusal: one run.requested per 202, no more. */
  async function expectOneEventPer202(): Promise<void> {
    const jsm = await jetstreamManager(hub().nats.nc);
    const info = await jsm.streams.info(TOPOLOGY.eventsStream, {
      subjects_filter: "sy.evt.*.*.run",
    });
    expect(Object.keys(info.state.subjects ?? {}).length).toBe(created);
  }

  return { sendAndCheck, expectOneEventPer202, seen };
}

import { afterAll, beforeAll, expect, test } from "bun:test";
import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { waitFor } from "../helpers/wait.ts";
import { type SecurityHub, startSecurityHub } from "./hub.ts";

const ACME = { id: "acme", token: "acme-token-LOGCANARY-0123456789abcdef" };
const JWT_CO = { id: "jwtco", token: "jwtco-token-LOGCANARY-0123456789abcdef" };
const CALLBACK_SECRET = generateWebhookSecret();
const INPUT = "input-text-canary-7f3a9c51e2";
const METADATA_SECRET = "metadata-canary-91be0d";
const received: string[] = [];
let receiver: ReturnType<typeof Bun.serve>;
let hub: SecurityHub;
let jwt = "";

beforeAll(async () => {
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      received.push(await req.text());
      return new Response(null, { status: 204 });
    },
  });
  const idp = await generateKeyPair("ES256", { extractable: true });
  jwt = await new SignJWT({ iss: "https://idp.test/", aud: "switchyard", sub: "svc" })
    .setProtectedHeader({ alg: "ES256" })
    .setExpirationTime("1h")
    .sign(idp.privateKey);
  hub = await startSecurityHub({
    clients: [ACME, JWT_CO],
    services: ["ingress", "projector", "executor", "callback"],
    yaml: `callbacks: { allow_cidrs: ["127.0.0.1/32"], retry_schedule: ["50ms"], jitter: 0 }`,
    clientYaml: {
      acme: `callback_secrets: ["\${CB_SECRET}"]`,
      jwtco: `jwt: { issuer: "https://idp.test/", audience: switchyard, public_key_pem: "\${IDP_KEY}", algorithms: [ES256] }`,
    },
    env: { CB_SECRET: CALLBACK_SECRET, IDP_KEY: await exportSPKI(idp.publicKey) },
  });
});
afterAll(async () => {
  await hub?.stop();
  await receiver?.stop(true);
});

const post = (token: string, body: unknown, contentType = "application/json") =>
  fetch(`${hub.baseUrl}/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

test("an end-to-end run logs no token, JWT, secret, input or metadata", async () => {
  const body = {
    request_id: "log-1",
    route: "demo.echo",
    input: INPUT,
    metadata: { principal: { id: "u1", tenant: "t1" }, note: METADATA_SECRET },
    callback_url: `http://127.0.0.1:${receiver.port}/cb`,
  };
  const first = await post(ACME.token, body);
  expect(first.status).toBe(202);
  const { job_id } = (await first.json()) as { job_id: string };
  // Replay, conflict, a refused request, bad tokens and a JWT client: every logging path we have.
  expect((await post(ACME.token, body)).status).toBe(200);
  expect((await post(ACME.token, { ...body, input: `${INPUT}-changed` })).status).toBe(409);
  expect((await post(ACME.token, { ...body, request_id: "log-2", extra: INPUT })).status).toBe(400);
  expect((await post(ACME.token, `{"input":"${INPUT}"`)).status).toBe(400);
  expect((await post(ACME.token, INPUT, "text/plain")).status).toBe(415);
  expect((await post(`${ACME.token}x`, body)).status).toBe(401);
  expect((await post(`${jwt}x`, body)).status).toBe(401);
  expect(
    (await post(jwt, { ...body, request_id: "log-jwt", callback_url: undefined })).status,
  ).toBe(202);
  await waitFor("the signed callback", () => received.some((text) => text.includes(job_id)));
  await waitFor("the callback to be recorded", async () => {
    const res = await fetch(`${hub.baseUrl}/jobs/${job_id}`, {
      headers: { authorization: `Bearer ${ACME.token}` },
    });
    const job = (await res.json()) as { status: string; callback?: { status: string } };
    return job.status === "done" && job.callback?.status === "delivered";
  });

  const logs = hub.logs();
  // The capture works and saw the run: otherwise "nothing leaked" would prove nothing.
  expect(logs).toContain(job_id);
  expect(logs).toContain("run accepted");
  const secretBody = CALLBACK_SECRET.slice("whsec_".length);
  const forbidden = {
    token: ACME.token,
    "token fragment": "LOGCANARY",
    jwt,
    "jwt signature": jwt.split(".")[2] ?? jwt,
    "callback secret": CALLBACK_SECRET,
    "callback secret key": secretBody,
    input: INPUT,
    metadata: METADATA_SECRET,
  };
  for (const [what, value] of Object.entries(forbidden)) {
    expect({ what, found: logs.includes(value) }).toEqual({ what, found: false });
  }
});

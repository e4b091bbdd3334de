import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import fc from "fast-check";
import { type HttpOutcome, postTask } from "../../services/executor/kinds/http/post.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { type DeliveryAttempt, deliverWebhook, parseCidrList } from "../../shared/net/index.ts";
import { generateWebhookSecret, webhookHeaders } from "../../shared/webhooks/index.ts";
import type { Task } from "../../shared/worker/index.ts";
import { FUZZ_SEED, fuzzRuns } from "./settings.ts";

// The other way round: what the hub reads. A raw socket server answers the executor POST
// (postTask) and the callback POST (deliverWebhook) with generated status lines, framings, bodies
// and deliveries (at once, slowly, stalling, cut off). Both must return within the attempt's
// deadline, never throw, never read past their cap, and classify the answer as docs/executors.md
// and docs/callbacks.md say.

const CAP = 4096;
/** Runs that stall wait out the deadline: about 250 ms a run on average, with room. */
const PROPERTY_TIMEOUT_MS = Math.max(60_000, fuzzRuns(100) * 250);
const TIMEOUT_MS = 800;
const SECRET = generateWebhookSecret();

const STATUS_LINES = [
  "HTTP/1.1 200 OK",
  "HTTP/1.1 200 OK",
  "HTTP/1.1 200 OK",
  "HTTP/1.1 201 Created",
  "HTTP/1.1 202 Accepted",
  "HTTP/1.1 301 Moved",
  "HTTP/1.1 400 Bad",
  "HTTP/1.1 410 Gone",
  "HTTP/1.1 429 Slow down",
  "HTTP/1.1 503 Busy",
  "HTTP/1.1 abc Nonsense",
  "garbage",
] as const;

const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

const bodyText = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify({ output: v })),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? "null"),
  fc.constantFrom(
    "",
    "not json",
    '{"output":',
    '{"output":"\\ud800"}',
    '{"output":1e400}',
    '{"output":12345678901234567890}',
    '{"output":1e20}',
    deep(60),
    deep(70),
    deep(10_000),
  ),
  fc
    .constantFrom(CAP - 20, CAP + 1, 20_000, 2_000_000)
    .map((n) => JSON.stringify({ output: "o".repeat(n) })),
);

const behaviour = fc.record({
  statusLine: fc.constantFrom(...STATUS_LINES),
  framing: fc.constantFrom("length", "length", "chunked", "close", "length-lies-high"),
  body: bodyText,
  delivery: fc.constantFrom("at-once", "at-once", "slow", "stall", "cut"),
});
type Behaviour = typeof behaviour extends fc.Arbitrary<infer T> ? T : never;

let current: Behaviour | undefined;
let server: Server;
let port = 0;

function answer(socket: Socket, b: Behaviour): void {
  const body = Buffer.from(b.body);
  const half = Math.floor(body.length / 2);
  const head = [b.statusLine, "Content-Type: application/json", "Connection: close"];
  if (b.framing === "length") head.push(`Content-Length: ${body.length}`);
  if (b.framing === "length-lies-high") head.push(`Content-Length: ${body.length + 10}`);
  if (b.framing === "chunked") head.push("Transfer-Encoding: chunked");
  const frame = (bytes: Buffer) =>
    b.framing === "chunked" && bytes.length > 0
      ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from("\r\n")])
      : bytes;
  const end = () => {
    if (b.framing === "chunked") socket.write("0\r\n\r\n");
    socket.end();
  };
  socket.write(`${head.join("\r\n")}\r\n\r\n`);
  if (b.delivery === "stall") {
    socket.write(frame(body.subarray(0, half))); // and nothing more, ever
  } else if (b.delivery === "cut") {
    // Half the body, flushed, then the connection ends (without a chunked terminator).
    socket.end(frame(body.subarray(0, half)));
  } else if (b.delivery === "slow") {
    const pieces = Math.min(5, body.length);
    let i = 0;
    const step = () => {
      if (socket.destroyed) return;
      if (i >= pieces) return end();
      const from = Math.floor((body.length * i) / pieces);
      const to = Math.floor((body.length * (i + 1)) / pieces);
      socket.write(frame(body.subarray(from, to)));
      i++;
      setTimeout(step, 25);
    };
    step();
  } else {
    socket.write(frame(body));
    end();
  }
}

beforeAll(async () => {
  server = createServer((socket) => {
    let got = Buffer.alloc(0);
    socket.on("error", () => {});
    socket.on("data", (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const text = got.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? "0");
      if (got.length - (end + 4) < length || !current) return;
      const b = current;
      current = undefined;
      answer(socket, b);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The body as the peer's framing delivers it to a careful reader: complete or not, and how much. */
function delivered(b: Behaviour): { complete: boolean; bytes: number } {
  const size = Buffer.byteLength(b.body);
  const interrupted = b.delivery === "stall" || b.delivery === "cut";
  const bytes = interrupted ? size >> 1 : size;
  switch (b.framing) {
    case "length":
      return { complete: !interrupted || size === 0, bytes };
    case "length-lies-high":
      return { complete: false, bytes };
    case "chunked":
      return { complete: !interrupted, bytes };
    default:
      // Without a length or chunks, the close ends the body: a cut-off answer looks complete.
      return { complete: b.delivery !== "stall", bytes };
  }
}

const statusOf = (b: Behaviour) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(b.statusLine)?.[1] ?? 0);

/** What docs/executors.md says postTask makes of this answer (undefined: one of several). */
function expectedTask(b: Behaviour): HttpOutcome["kind"] | undefined {
  const status = statusOf(b);
  if (status === 0) return "retry";
  if (status === 202) return "accepted";
  if (status === 429 || status >= 500) return "retry";
  if (status >= 400) return "refused";
  if (status < 200 || status >= 300) return "bad_response";
  const { complete, bytes } = delivered(b);
  const declared = b.framing === "length" || b.framing === "length-lies-high";
  const declaredBytes = Buffer.byteLength(b.body) + (b.framing === "length-lies-high" ? 10 : 0);
  if (declared && declaredBytes > CAP) return "too_large";
  if (bytes > CAP) return complete ? "too_large" : undefined;
  if (!complete) return "retry";
  return undefined; // see allowedKinds
}

/**
 * The kinds allowed when expectedTask has no single answer: a complete small body parses to done
 * or bad_response; a cut-off body above the cap may end as too_large or as the cut (Bun drops
 * data it had queued when the connection errors, so which comes first is a race).
 */
function allowedKinds(b: Behaviour): readonly HttpOutcome["kind"][] {
  return delivered(b).complete ? ["done", "bad_response"] : ["too_large", "retry"];
}

const TASK = {
  job_id: "job_AAAAAAAAAAAAAAAAAAAAAA",
  client_id: "acme",
  route: "x.fuzz",
  input: "hi",
} as unknown as Task;

const counts = new Map<string, number>();
const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);

describe(`answers of executors and receivers (${fuzzRuns(100)} runs each, seed ${FUZZ_SEED})`, () => {
  test(
    "postTask: within the deadline, never past the cap, classified as documented",
    async () => {
      await fc.assert(
        fc.asyncProperty(behaviour, async (b) => {
          current = b;
          const started = Date.now();
          const outcome = await postTask({
            url: `http://127.0.0.1:${port}/task`,
            secret: SECRET,
            task: TASK,
            attempt: 1,
            timeoutMs: TIMEOUT_MS,
            clock: systemClock,
            signal: new AbortController().signal,
            maxResponseBytes: CAP,
          });
          const elapsed = Date.now() - started;
          expect({ inTime: elapsed < TIMEOUT_MS + 1_500, elapsed, b }).toEqual({
            inTime: true,
            elapsed,
            b,
          });
          count(`executor ${outcome.kind}`);
          const want = expectedTask(b);
          if (want !== undefined) {
            expect({ outcome, b }).toEqual({ outcome: expect.objectContaining({ kind: want }), b });
            return;
          }
          expect({
            kind: outcome.kind,
            allowed: allowedKinds(b).includes(outcome.kind),
            b,
          }).toEqual({
            kind: outcome.kind,
            allowed: true,
            b,
          });
          if (outcome.kind === "done") {
            expect(JSON.stringify(outcome.output)?.length ?? 0).toBeLessThanOrEqual(CAP);
          }
        }),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(100), endOnFailure: true },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "deliverWebhook: within the deadline, delivered only for a complete 2xx within the cap",
    async () => {
      const body = JSON.stringify({ type: "job.completed", data: { job_id: "j" } });
      const headers = webhookHeaders({
        id: "msg_fuzz",
        timestamp: Math.floor(Date.now() / 1000),
        body,
        secrets: [SECRET],
      });
      await fc.assert(
        fc.asyncProperty(behaviour, async (b) => {
          current = b;
          const started = Date.now();
          const attempt: DeliveryAttempt = await deliverWebhook({
            url: `http://127.0.0.1:${port}/cb`,
            body,
            headers,
            allowCidrs: parseCidrList(["127.0.0.1/32"]),
            timeoutMs: TIMEOUT_MS,
            maxResponseBytes: CAP,
          });
          expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1_500);
          count(`receiver ${attempt.ok ? "delivered" : attempt.errorClass}`);
          const status = statusOf(b);
          const { complete, bytes } = delivered(b);
          const shouldDeliver = status >= 200 && status < 300 && complete && bytes <= CAP;
          expect({ ok: attempt.ok, b }).toEqual({ ok: shouldDeliver, b });
          if (status >= 200 && status < 300 && bytes > CAP && complete) {
            expect(attempt.errorClass).toBe("response_too_large");
          }
        }),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(100), endOnFailure: true },
      );
      process.stdout.write(
        `peer answers: ${[...counts.entries()]
          .sort()
          .map(([k, v]) => `${k} ×${v}`)
          .join(", ")}\n`,
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

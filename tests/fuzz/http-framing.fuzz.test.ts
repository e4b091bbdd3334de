import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import fc from "fast-check";
import { type SecurityHub, startSecurityHub } from "../security/hub.ts";
import { FUZZ_SEED, fuzzRuns, fuzzTimeoutMs } from "./settings.ts";

// Raw HTTP/1.x at the ingress over a socket: request lines, methods, targets, versions, Host,
// Content-Length / Transfer-Encoding combinations, broken chunking, header syntax, line endings,
// slow and oversized bodies. Whatever arrives, the answer is one of
//   - Switchyard's: a status below 500, JSON or problem+json;
//   - Bun's parser refusing the framing before any handler runs: an empty 400/431/505 with
//     Connection: close (docs/errors.md lists them);
//   - a closed connection (Bun does this for method tokens it does not know);
// never a 5xx from Switchyard, never a hang, never a crash (the hub answers afterwards).

const TOKEN = "acme-fuzz-framing-token-0123456789";
const MAX_BODY = 4096;
let hub: SecurityHub;
let port = 0;

beforeAll(async () => {
  hub = await startSecurityHub({
    clients: [{ id: "acme", token: TOKEN }],
    server: { max_body_bytes: MAX_BODY, auth_failures_per_minute: 1_000_000 },
  });
  port = Number(new URL(hub.baseUrl).port);
});
afterAll(() => hub?.stop());

const crlf = fc.oneof({ weight: 12, arbitrary: fc.constant("\r\n") }, fc.constantFrom("\n", "\r"));

const method = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom("GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"),
  },
  fc.constantFrom(
    "CONNECT",
    "TRACE",
    "PROPFIND",
    "M-SEARCH",
    "QUERY",
    "get",
    "FOO",
    "",
    "G ET",
    "POST\t",
  ),
  fc.stringMatching(/^[A-Z]{1,10}$/),
);

const jobId = "job_AAAAAAAAAAAAAAAAAAAAAA";
const target = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom("/run", `/jobs/${jobId}`, "/healthz", "/readyz", "/openapi.json"),
  },
  fc.constantFrom(
    "/executor/v1/jobs/x/events",
    "http://evil.example/run",
    "https://127.0.0.1/healthz",
    "evil.example:443",
    "*",
    "",
    "/%00",
    "/jobs/%ZZ",
    "/jobs/..%2f..%2fetc",
    "/\u00e9t\u00e9",
    "/jobs/\u202e",
    "//run",
    "/run?x=1&x=2",
    "/run#frag",
  ),
  fc.string({ unit: "binary-ascii", maxLength: 20 }).map((s) => `/${s}`),
  fc.constantFrom(`/${"a".repeat(5000)}`),
);

const version = fc.oneof(
  { weight: 20, arbitrary: fc.constant("HTTP/1.1") },
  fc.constantFrom("HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "HTTP/1", "http/1.1", "", "HTTP/1.1 extra"),
);

const hostHeader = fc.oneof(
  { weight: 14, arbitrary: fc.constant(["Host: 127.0.0.1"]) },
  fc.constantFrom(
    [],
    ["Host: 127.0.0.1", "Host: evil.example"],
    ["Host: a b"],
    ["Host: [::1"],
    ["Host: exa%mple"],
    ["Host: a/b"],
    ["Host: \u00e9xample"],
    ["Host:"],
    ["Host: 127.0.0.1:99999"],
  ),
);

/** Most requests authenticate and send JSON, so the body is actually read. */
const usual = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constant([`Authorization: Bearer ${TOKEN}`, "Content-Type: application/json"]),
  },
  fc.constant([]),
);

const extraHeaders = fc.array(
  fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.stringMatching(/^x-[a-z]{1,10}$/), fc.stringMatching(/^[\x21-\x7e]{0,20}$/))
        .map(([k, v]) => `${k}: ${v}`),
    },
    fc.constantFrom(
      `Authorization: Bearer ${TOKEN}`,
      "Authorization: Bearer nope",
      "Content-Type: application/json",
      "Content-Type: text/plain",
      "Expect: 100-continue",
      "Connection: close",
      "X-A: b\r\n c", // obsolete line folding
      "Bad Header: x",
      "X-Ctl: \u0001\u0002",
      "X-Uni: \u00e9\u202e",
      ": empty-name",
      "X-Empty:",
      `X-Big: ${"b".repeat(20_000)}`,
    ),
    fc
      .tuple(fc.stringMatching(/^[A-Za-z-]{1,12}$/), fc.string({ maxLength: 20 }))
      .map(([k, v]) => `${k}: ${v}`),
  ),
  { maxLength: 3 },
);

let bodies = 0;
const runBody = (input = "hi") =>
  `{"request_id":"frame-${bodies++}","route":"demo.echo","input":"${input}"}`;

/** How the body is framed, and what is actually sent. */
const framing = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: "none" as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("length" as const),
      size: fc.oneof(fc.nat(200), fc.constantFrom(MAX_BODY, MAX_BODY + 1, 100_000)),
      // Declared minus sent: 0 is honest; positive leaves the server waiting for more.
      lie: fc.constantFrom(0, 0, 0, 5, -5),
      declared: fc.option(
        fc.constantFrom("abc", "-1", "1e3", " 10", "10, 10", "99999999999999999999"),
      ),
      valid: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("chunked" as const),
      chunks: fc.array(fc.nat(2000), { maxLength: 5 }),
      big: fc.boolean(),
      breakage: fc.constantFrom(
        "none",
        "none",
        "none",
        "none",
        "bad-size",
        "no-crlf",
        "no-terminator",
        "extension",
        "trailer",
        "with-length",
        "te-gzip",
        "te-twice",
      ),
      valid: fc.boolean(),
    }),
  },
);

/** POST /run often, so bodies are read and framed every which way; anything else besides. */
const line = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ method: "POST", target: "/run" }) },
  { weight: 3, arbitrary: fc.record({ method, target }) },
);

const request = fc.record({
  line,
  version,
  eol: crlf,
  host: hostHeader,
  usual,
  headers: extraHeaders,
  framing,
  slowMs: fc.constantFrom(0, 0, 0, 0, 20),
});

type Req = typeof request extends fc.Arbitrary<infer T> ? T : never;

function bodyOf(valid: boolean, size: number): string {
  if (valid) {
    const base = runBody("");
    return runBody("p".repeat(Math.max(2, size - base.length)));
  }
  return "x".repeat(size);
}

/** The request as bytes, split where a slow client would pause. */
function build(r: Req): { parts: string[]; waitsForMore: boolean } {
  const headers = [...r.host, ...r.usual, ...r.headers];
  let body = "";
  let waitsForMore = false;
  const f = r.framing;
  if (f.kind === "length") {
    const content = bodyOf(f.valid, f.size);
    const declared = f.declared ?? String(content.length + f.lie);
    headers.push(`Content-Length: ${declared}`);
    body = f.lie < 0 ? content.slice(0, content.length + f.lie) : content;
    // A declared length of our own making may promise more than is sent.
    waitsForMore = f.lie > 0 || f.declared !== null;
  } else if (f.kind === "chunked") {
    const content = bodyOf(f.valid, f.chunks.reduce((a, b) => a + b, 0) + (f.big ? 50_000 : 0));
    headers.push(
      f.breakage === "te-gzip"
        ? "Transfer-Encoding: gzip"
        : f.breakage === "te-twice"
          ? "Transfer-Encoding: chunked, chunked"
          : "Transfer-Encoding: chunked",
    );
    if (f.breakage === "with-length") headers.push("Content-Length: 10");
    let rest = content;
    const pieces: string[] = [];
    while (rest.length > 0) {
      const n = Math.min(rest.length, 1 + ((pieces.length * 997) % 4000));
      const size = f.breakage === "bad-size" ? "zz" : n.toString(16);
      const ext = f.breakage === "extension" ? ";name=value" : "";
      pieces.push(`${size}${ext}\r\n${rest.slice(0, n)}${f.breakage === "no-crlf" ? "" : "\r\n"}`);
      rest = rest.slice(n);
    }
    if (f.breakage !== "no-terminator") {
      pieces.push(f.breakage === "trailer" ? "0\r\nX-T: 1\r\n\r\n" : "0\r\n\r\n");
    } else {
      waitsForMore = true;
    }
    body = pieces.join("");
  }
  const head = `${r.line.method} ${r.line.target} ${r.version}`.trimEnd();
  const text = `${head}${r.eol}${headers.map((h) => `${h}${r.eol}`).join("")}${r.eol}`;
  const parts = r.slowMs > 0 ? [text, ...(body.match(/[\s\S]{1,512}/g) ?? [])] : [text + body];
  return { parts, waitsForMore };
}

interface Answer {
  status: number;
  contentType: string;
  body: string;
  closedWithoutAnswer: boolean;
  timedOut: boolean;
}

/** The first final (non-1xx) answer in `got`, and whether it is complete. */
function firstFinal(
  got: Buffer,
  isHead: boolean,
): { head: string; body: string; complete: boolean } | undefined {
  let offset = 0;
  for (;;) {
    const text = got.subarray(offset).toString("latin1");
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) return undefined;
    const head = text.slice(0, end);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
    if (status >= 100 && status < 200) {
      offset += Buffer.byteLength(text.slice(0, end + 4), "latin1");
      continue; // 100 Continue: the real answer follows
    }
    // An answer to HEAD has no body, whatever its Content-Length says.
    const length = isHead ? 0 : Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? "0");
    const start = offset + end + 4;
    return {
      head,
      // Only the first answer: bytes a lying Content-Length left over may start a second one.
      body: got.subarray(start, start + length).toString("utf8"),
      complete: got.length - start >= length,
    };
  }
}

/** Sends, half-closes, and reads the first final answer (or the close). */
function exchange(
  parts: string[],
  options: { slowMs: number; halfClose: boolean; isHead: boolean },
): Promise<Answer> {
  const { slowMs, halfClose, isHead } = options;
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let got = Buffer.alloc(0);
    let done = false;
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const answer = firstFinal(got, isHead);
      resolve({
        status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer?.head ?? "")?.[1] ?? 0),
        contentType: /\r\ncontent-type: ([^\r]*)/i.exec(answer?.head ?? "")?.[1] ?? "",
        body: answer?.body ?? "",
        closedWithoutAnswer: answer === undefined && !timedOut,
        timedOut,
      });
    };
    const timer = setTimeout(() => finish(true), 5_000);
    socket.on("data", (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (firstFinal(got, isHead)?.complete) finish(false);
    });
    socket.on("error", () => finish(false));
    socket.on("close", () => finish(false));
    socket.on("connect", async () => {
      for (const part of parts) {
        if (done) return;
        socket.write(part, "latin1");
        if (slowMs) await Bun.sleep(slowMs);
      }
      // A client whose body is short says it has nothing more (Bun then closes: no hang). A
      // complete request keeps its side open, as ordinary clients do (Bun drops the connection on
      // a half-close before it answered).
      if (halfClose && !done) socket.end();
    });
  });
}

/** Methods Bun's parser accepts (it closes the connection on other tokens). */
const KNOWN_METHODS = [
  "GET",
  "POST",
  "HEAD",
  "OPTIONS",
  "PUT",
  "DELETE",
  "PATCH",
  "CONNECT",
  "TRACE",
  "PROPFIND",
  "M-SEARCH",
  "QUERY",
];

/** Every outcome class and how often it occurred: reported in docs/security.md. */
const classes = new Map<string, number>();
const count = (key: string) => classes.set(key, (classes.get(key) ?? 0) + 1);

describe(`raw HTTP framing at the ingress (${fuzzRuns(300)} runs, seed ${FUZZ_SEED})`, () => {
  test(
    "Switchyard never answers 5xx; Bun's bare refusals are 4xx/505; no hang; the hub stays up",
    async () => {
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          const { parts, waitsForMore } = build(r);
          const answer = await exchange(parts, {
            slowMs: r.slowMs,
            halfClose: waitsForMore,
            isHead: r.line.method === "HEAD",
          });
          expect(answer.timedOut).toBe(false);
          if (answer.closedWithoutAnswer) {
            // Only a client that sent less than it promised, or a method Bun does not know.
            if (!waitsForMore) expect(KNOWN_METHODS).not.toContain(r.line.method);
            count(waitsForMore ? "closed: body short of its length" : "closed: unknown method");
            return;
          }
          expect(answer.status).toBeGreaterThanOrEqual(200);
          const ours = /json/.test(answer.contentType);
          if (ours) {
            expect(answer.status).toBeLessThan(500);
            if (answer.status >= 400 && r.line.method !== "HEAD") {
              expect(answer.contentType).toBe("application/problem+json");
              expect(JSON.parse(answer.body).status).toBe(answer.status);
            }
            count(`switchyard ${answer.status}`);
          } else if (answer.body === "" && [400, 413, 431, 505].includes(answer.status)) {
            count(`bun ${answer.status}`);
          } else {
            // HEAD answers have no body but are ours (JSON content type above); anything else is not.
            expect({ status: answer.status, contentType: answer.contentType }).toEqual({
              status: -1,
              contentType: "unexpected",
            });
          }
        }),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(300), endOnFailure: true },
      );
      const health = await fetch(`${hub.baseUrl}/healthz`);
      expect(health.status).toBe(200);
      expect(hub.logs()).not.toContain('"level":50');
      const total = [...classes.values()].reduce((a, b) => a + b, 0);
      process.stdout.write(
        `http framing: ${total} requests: ${[...classes.entries()]
          .sort()
          .map(([k, v]) => `${k} ×${v}`)
          .join(", ")}\n`,
      );
      expect(total).toBe(fuzzRuns(300));
    },
    fuzzTimeoutMs(300) * 2,
  );
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { SecurityHub } from "../security/hub.ts";
import { createRunChecker, startRunFuzzHub } from "./run-check.ts";
import { CALLBACK_URLS, CLIENTS, ROUTES } from "./run-model.ts";
import { FUZZ_SEED, fuzzRuns, fuzzTimeoutMs } from "./settings.ts";
import { callbackUrl, unusualRoute } from "./string-fields.ts";

let hub: SecurityHub;
const checker = createRunChecker(() => hub);

beforeAll(async () => {
  hub = await startRunFuzzHub();
});
afterAll(() => hub?.stop());

const { acme, globex } = CLIENTS;
const authorization = fc.option(
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(`Bearer ${acme.token}`, `Bearer ${globex.token}`) },
    fc.constantFrom(
      `bearer ${acme.token}`,
      `BEARER   ${globex.token}`,
      `Bearer ${globex.token}  `,
      `Bearer ${acme.token} extra`,
      `Bearer ${acme.token.slice(0, -1)}`,
      `Bearer ${acme.token}x`,
      `Basic ${btoa(`acme:${acme.token}`)}`,
      "Bearer",
      "Bearer ",
      acme.token,
      `Bearer ${acme.token},Bearer ${globex.token}`,
      "Bearer a.b.c",
      "Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.",
    ),
  ),
  { freq: 12 },
);

const contentType = fc.option(
  fc.constantFrom(
    "application/json",
    "application/json",
    "application/json",
    "application/json",
    "application/json; charset=utf-8",
    "Application/JSON",
    "application/json;",
    "application/json ; x=y",
    "application/jsonx",
    "application/json-seq",
    "application/problem+json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "",
  ),
  { freq: 8 },
);

const extraHeaders = fc.dictionary(
  fc.oneof(
    fc.stringMatching(/^x-[a-z0-9-]{1,16}$/),
    fc.constantFrom("traceparent", "x-forwarded-for", "accept", "origin", "cookie", "x-request-id"),
  ),
  fc.oneof(
    fc.stringMatching(/^[\x21-\x7e]{0,60}$/),
    fc.constantFrom(
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-00000000000000000000000000000000-0000000000000000-01",
      "ff-zz",
      "1.2.3.4, 5.6.7.8",
    ),
  ),
  { maxKeys: 4 },
);

/** Unicode that is easy to get wrong: normalisation forms, bidi and invisible controls, halves. */
const UNUSUAL_UNICODE = [
  "caf\u00e9", // NFC
  "cafe\u0301", // NFD of the same word
  "\u212b\u00c5A\u030a", // three spellings of Å
  "\u202eevil\u202c", // right-to-left override
  "\u2066iso\u2069\u200f\u061c", // isolates and marks
  "\u200b\u200d\ufeff\u2060", // zero-width characters and BOM
  "\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67", // a ZWJ family
  "\ud800", // unpaired high surrogate
  "a\udc00b", // unpaired low surrogate
  "\udbff\udfff\ud800", // a pair, then half of one
  "\u0000\u001f\u007f\u0085\u2028\u2029", // controls and line separators
  "\uffff\ufffe\ufdd0", // noncharacters
];

const unusualText = fc.oneof(
  fc.constantFrom(...UNUSUAL_UNICODE),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc
    .tuple(fc.constantFrom(...UNUSUAL_UNICODE), fc.string({ maxLength: 6 }))
    .map(([a, b]) => `${b}${a}${b}`),
);

const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  unusualText,
  fc.constantFrom("", "a".repeat(255), "a".repeat(256), "é".repeat(8), "é".repeat(9), "\u0000"),
  // Around the 255-character request_id limit with characters outside the BMP.
  fc.constantFrom("😀".repeat(128), "😀".repeat(255), "😀".repeat(256), "a".repeat(128)),
);

/** Number literals as sent (spliced into the JSON text): kept, lossy, out of range. */
const NUMBER_LITERALS = [
  "0",
  "-0",
  "1e20",
  "1E2",
  "0.1",
  "5e-324",
  "1.7976931348623157e308",
  "9007199254740992",
  "9007199254740993",
  "12345678901234567890",
  "1e400",
  "-1e400",
  "1e-400",
  "0.1000000000000000000001",
  "123456789.123456789123",
];
const numberLiteral = fc.constantFrom(...NUMBER_LITERALS).map((lit) => `@@num:${lit}@@`);
/** Replaces the number placeholders with the raw literals. */
const spliceNumbers = (json: string) => json.replace(/"@@num:([^"@]+)@@"/g, "$1");

/** Nested `levels` deep (metadata itself is level 1): around the depth limit of 16, and far above. */
const deepValue = fc
  .tuple(fc.constantFrom(14, 15, 16, 17, 40, 3000), fc.boolean())
  .map(([levels, arrays]) => {
    let value: unknown = arrays ? [] : {};
    for (let i = 2; i < levels; i++) value = arrays ? [value] : { d: value };
    return value;
  });

/** Around the 256-member limit (the one member holding the list counts too). */
const wideValue = fc
  .constantFrom(254, 255, 256, 400)
  .map((count) => Array.from({ length: count }, (_, i) => i));

const longString = fc.constantFrom(4095, 4096, 4097, 60_000).map((length) => "s".repeat(length));

const edgyMetadata = fc.oneof(
  fc.record({ n: numberLiteral }),
  fc.dictionary(fc.string({ maxLength: 4 }), numberLiteral, { maxKeys: 3 }),
  fc.record({ deep: deepValue }),
  fc.record({ list: wideValue }),
  fc.record({ note: longString }),
  fc.dictionary(longString, fc.constant(1), { maxKeys: 1 }),
  fc.dictionary(unusualText, unusualText, { maxKeys: 3 }),
);

const principal = fc.oneof(
  { weight: 3, arbitrary: fc.record({ id: fc.string({ minLength: 1 }), tenant: text }) },
  fc.record({ id: fc.jsonValue(), tenant: fc.jsonValue() }, { requiredKeys: [] }),
  fc.jsonValue(),
);

const metadata = fc.oneof(
  { weight: 3, arbitrary: fc.record({ principal, note: fc.jsonValue() }, { requiredKeys: [] }) },
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue(), { maxKeys: 3 }),
  fc.jsonValue(),
  { weight: 2, arbitrary: edgyMetadata },
);

const routeKey = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...Object.keys(ROUTES)) },
  fc.constantFrom("unknown.route", "DEMO.ECHO", "demo.*", "*", "demo", "demo.echo.", ""),
  fc.string({ maxLength: 10 }),
  unusualRoute,
);

const requestId = fc.oneof(
  // A small pool, so replays (200) and conflicts (409) happen.
  { weight: 4, arbitrary: fc.constantFrom("r1", "r2", "r3") },
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 30 }) },
  // The limit is 255 UTF-16 code units: 128 emoji (256 units) are one too many.
  fc.constantFrom("😀".repeat(127), "😀".repeat(128), `${"a".repeat(254)}😀`, "a".repeat(255)),
  text,
);

/** A run request that is valid apart from what the route, input or callback rules say. */
const wellFormed = fc.record(
  {
    request_id: requestId,
    route: routeKey,
    input: text,
    metadata: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, metadata),
    callback_url: fc.oneof(
      { weight: 2, arbitrary: fc.constant(undefined) },
      fc.constantFrom(...Object.keys(CALLBACK_URLS)),
      callbackUrl,
    ),
  },
  { noNullPrototype: true },
);

const FIELDS = ["request_id", "route", "input", "metadata", "callback_url"] as const;
/** At most one mutation: a field replaced by any JSON value or removed, or an extra field added. */
const mutation = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  fc.record({
    kind: fc.constant("set" as const),
    field: fc.constantFrom(...FIELDS),
    value: fc.jsonValue(),
  }),
  fc.record({ kind: fc.constant("drop" as const), field: fc.constantFrom(...FIELDS) }),
  fc.record({
    kind: fc.constant("add" as const),
    field: fc.oneof(fc.constantFrom("callback", "source", "__proto__", "Route"), fc.string()),
    value: fc.jsonValue(),
  }),
);

const mutated = fc.tuple(wellFormed, mutation).map(([run, m]) => {
  const out: Record<string, unknown> = { ...run };
  if (m?.kind === "drop") delete out[m.field];
  else if (m) Object.defineProperty(out, m.field, { value: m.value, enumerable: true });
  return spliceNumbers(JSON.stringify(out));
});

const body = fc.oneof(
  { weight: 8, arbitrary: mutated },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v)) },
  // Whitespace and key order must not matter for "the same body".
  {
    weight: 1,
    arbitrary: wellFormed.map((v) => spliceNumbers(JSON.stringify(v, Object.keys(v).reverse(), 2))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom("", "{", '{"request_id":', "nul", "[1,]", "{'a':1}", "\uFEFF{}"),
  },
);

const encodedBody = fc.oneof(
  { weight: 9, arbitrary: body.map((s) => new TextEncoder().encode(s)) },
  // Bytes that are not UTF-8, inside an otherwise valid request.
  {
    weight: 1,
    arbitrary: fc.uint8Array({ maxLength: 8 }).map((bad) => {
      const [head, tail] = ['{"request_id":"x","route":"demo.echo","input":"', '"}'];
      return new Uint8Array([
        ...new TextEncoder().encode(head),
        0xff,
        0xc3,
        ...bad,
        ...new TextEncoder().encode(tail),
      ]);
    }),
  },
);

const request = fc.record({
  authorization,
  contentType,
  extraHeaders,
  body: encodedBody,
  // Instead of the body: the last accepted request again, re-serialised (a client's retry).
  replay: fc.nat(5).map((n) => n === 0),
});

/** The last request that got a 202, so retries of it (which must answer 200) get generated. */
let lastAccepted: { body: Uint8Array; authorization: string; contentType: string } | undefined;

function retryOf(last: NonNullable<typeof lastAccepted>): Uint8Array {
  const value = JSON.parse(new TextDecoder().decode(last.body)) as Record<string, unknown>;
  return new TextEncoder().encode(JSON.stringify(value, Object.keys(value).reverse(), 1));
}

describe(`POST /run against its documented model (${fuzzRuns(300)} runs, seed ${FUZZ_SEED})`, () => {
  test(
    "never 5xx; accepts exactly the valid requests; every refusal is problem+json",
    async () => {
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          const headers = new Headers(r.extraHeaders);
          const replay = r.replay ? lastAccepted : undefined;
          const authValue = replay?.authorization ?? r.authorization;
          const typeValue = replay?.contentType ?? r.contentType;
          if (authValue !== null) headers.set("authorization", authValue);
          if (typeValue !== null) headers.set("content-type", typeValue);
          const bytes = replay ? retryOf(replay) : r.body;
          const got = await checker.sendAndCheck(headers, bytes);
          if (got.status === 202) {
            lastAccepted = {
              body: bytes,
              authorization: headers.get("authorization") ?? "",
              contentType: headers.get("content-type") ?? "",
            };
          }
        }),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(300), endOnFailure: true },
      );
      await checker.expectOneEventPer202();
      expect([...checker.seen].sort()).toEqual(
        expect.arrayContaining([
          "200:",
          "202:",
          "400:callback_url_refused",
          "400:invalid_request",
          "400:malformed_json",
          "401:unauthorized",
          "403:route_not_allowed",
          "409:request_id_conflict",
          "415:unsupported_media_type",
        ]),
      );
    },
    fuzzTimeoutMs(300),
  );
});

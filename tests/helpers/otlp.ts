/**
 * A local OTLP/HTTP trace receiver on 127.0.0.1 for tests: it accepts POST /v1/traces in both
 * encodings the exporters send (application/x-protobuf and application/json), decodes every span,
 * and keeps the raw bodies so a test can search them for what must never be exported.
 */

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  /** "" for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
}

export interface OtlpReceiver extends AsyncDisposable {
  /** Base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string;
  spans(): readonly ReceivedSpan[];
  /** Every request body as received (protobuf bytes as latin1, JSON as text). */
  rawBodies(): readonly string[];
  contentTypes(): readonly string[];
  stop(): Promise<void>;
}

// --- protobuf wire format, just enough for ExportTraceServiceRequest ---

interface Field {
  readonly no: number;
  readonly wire: number;
  /** Varint or fixed value. */
  readonly int: bigint;
  /** Length-delimited payload. */
  readonly bytes: Uint8Array;
}

function* fields(buf: Uint8Array): Generator<Field> {
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[pos++];
      if (byte === undefined) throw new Error("truncated varint");
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  const fixed = (n: number): bigint => {
    let result = 0n;
    for (let i = n - 1; i >= 0; i--) result = (result << 8n) | BigInt(buf[pos + i] ?? 0);
    pos += n;
    return result;
  };
  const empty = new Uint8Array(0);
  while (pos < buf.length) {
    const key = Number(varint());
    const no = key >> 3;
    const wire = key & 7;
    if (wire === 0) yield { no, wire, int: varint(), bytes: empty };
    else if (wire === 1) yield { no, wire, int: fixed(8), bytes: empty };
    else if (wire === 5) yield { no, wire, int: fixed(4), bytes: empty };
    else if (wire === 2) {
      const length = Number(varint());
      yield { no, wire, int: 0n, bytes: buf.subarray(pos, pos + length) };
      pos += length;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** AnyValue: 1 string, 2 bool, 3 int, 4 double. */
function anyValue(buf: Uint8Array): AttributeValue {
  for (const f of fields(buf)) {
    if (f.no === 1) return text(f.bytes);
    if (f.no === 2) return f.int !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.int));
    if (f.no === 4) return new Float64Array(new BigUint64Array([f.int]).buffer)[0] ?? 0;
  }
  return "";
}

/** KeyValue: 1 key, 2 value. */
function keyValue(buf: Uint8Array): [string, AttributeValue] {
  let key = "";
  let value: AttributeValue = "";
  for (const f of fields(buf)) {
    if (f.no === 1) key = text(f.bytes);
    if (f.no === 2) value = anyValue(f.bytes);
  }
  return [key, value];
}

/** Span: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 9 attributes, 15 status. */
function protoSpan(buf: Uint8Array, service: string): ReceivedSpan {
  const span = {
    service,
    traceId: "",
    spanId: "",
    parentSpanId: "",
    name: "",
    kind: 0,
    attributes: {} as Record<string, AttributeValue>,
    statusCode: 0,
  };
  for (const f of fields(buf)) {
    if (f.no === 1) span.traceId = hex(f.bytes);
    else if (f.no === 2) span.spanId = hex(f.bytes);
    else if (f.no === 4) span.parentSpanId = hex(f.bytes);
    else if (f.no === 5) span.name = text(f.bytes);
    else if (f.no === 6) span.kind = Number(f.int);
    else if (f.no === 9) {
      const [k, v] = keyValue(f.bytes);
      span.attributes[k] = v;
    } else if (f.no === 15) {
      for (const s of fields(f.bytes)) if (s.no === 3) span.statusCode = Number(s.int);
    }
  }
  return span;
}

/** ExportTraceServiceRequest: 1 ResourceSpans (1 resource, 2 ScopeSpans (2 spans)). */
export function decodeProtobufTraces(buf: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of fields(buf)) {
    if (rs.no !== 1) continue;
    let service = "";
    const scopes: Uint8Array[] = [];
    for (const f of fields(rs.bytes)) {
      if (f.no === 1) {
        for (const a of fields(f.bytes)) {
          if (a.no !== 1) continue;
          const [k, v] = keyValue(a.bytes);
          if (k === "service.name") service = String(v);
        }
      } else if (f.no === 2) scopes.push(f.bytes);
    }
    for (const scope of scopes) {
      for (const f of fields(scope)) if (f.no === 2) out.push(protoSpan(f.bytes, service));
    }
  }
  return out;
}

// --- OTLP/JSON ---

interface JsonKeyValue {
  key: string;
  value: {
    stringValue?: string;
    boolValue?: boolean;
    intValue?: string | number;
    doubleValue?: number;
  };
}

function jsonValue(v: JsonKeyValue["value"]): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  return v.doubleValue ?? "";
}

export function decodeJsonTraces(body: string): ReceivedSpan[] {
  const request = JSON.parse(body) as {
    resourceSpans?: {
      resource?: { attributes?: JsonKeyValue[] };
      scopeSpans?: {
        spans?: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          attributes?: JsonKeyValue[];
          status?: { code?: number };
        }[];
      }[];
    }[];
  };
  const out: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? []) {
    const serviceAttr = rs.resource?.attributes?.find((a) => a.key === "service.name");
    const service = serviceAttr ? String(jsonValue(serviceAttr.value)) : "";
    for (const scope of rs.scopeSpans ?? []) {
      for (const s of scope.spans ?? []) {
        out.push({
          service,
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? "",
          name: s.name,
          kind: s.kind,
          attributes: Object.fromEntries(
            (s.attributes ?? []).map((a) => [a.key, jsonValue(a.value)]),
          ),
          statusCode: s.status?.code ?? 0,
        });
      }
    }
  }
  return out;
}

/** Starts the receiver on a free loopback port. */
export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const raw: string[] = [];
  const types: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (request.method !== "POST" || path !== "/v1/traces") {
        return new Response("not found", { status: 404 });
      }
      const type = request.headers.get("content-type") ?? "";
      const body = new Uint8Array(await request.arrayBuffer());
      types.push(type);
      if (type.startsWith("application/json")) {
        const json = text(body);
        raw.push(json);
        spans.push(...decodeJsonTraces(json));
        return Response.json({});
      }
      raw.push(Buffer.from(body).toString("latin1"));
      spans.push(...decodeProtobufTraces(body));
      return new Response(new Uint8Array(0), {
        headers: { "content-type": "application/x-protobuf" },
      });
    },
  });
  const stop = async () => {
    await server.stop(true);
  };
  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    spans: () => spans,
    rawBodies: () => raw,
    contentTypes: () => types,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * An HTTP executor answering `output` and a callback receiver answering 204, each recording the
 * traceparent header of the last request it got ("(none)" when absent; "" before any).
 */
export function traceparentRecorders(output: unknown) {
  const seen = { task: "", callback: "" };
  const executor = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      seen.task = req.headers.get("traceparent") ?? "(none)";
      return Response.json({ output });
    },
  });
  const receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      seen.callback = req.headers.get("traceparent") ?? "(none)";
      return new Response(null, { status: 204 });
    },
  });
  return {
    seen,
    executor,
    receiver,
    stop() {
      executor.stop(true);
      receiver.stop(true);
    },
  };
}

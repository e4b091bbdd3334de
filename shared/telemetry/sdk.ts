/**
 * The OpenTelemetry SDK behind the Tracing interface. Imported only when tracing is configured,
 * so a hub without an endpoint never loads it.
 */
import {
  type Context,
  DiagLogLevel,
  diag,
  type Span as OtelSpan,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { Logger } from "../log/index.ts";
import { formatTraceparent, parseTraceparent } from "../trace/index.ts";
import type { TracingConfig } from "./config.ts";
import {
  failureType,
  type SpanAttributes,
  type SpanKindName,
  type TraceSpan,
  type Tracing,
} from "./index.ts";

const KINDS: Record<SpanKindName, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  internal: SpanKind.INTERNAL,
};

type Enabled = Extract<TracingConfig, { enabled: true }>;

function samplerOf(config: Enabled["sampler"]): Sampler {
  const root =
    config.root === "always_off"
      ? new AlwaysOffSampler()
      : config.root === "traceidratio"
        ? new TraceIdRatioBasedSampler(config.ratio)
        : new AlwaysOnSampler();
  return config.parentBased ? new ParentBasedSampler({ root }) : root;
}

/** The context of a remote parent span, from its traceparent. */
function parentContext(traceparent: string | undefined): Context {
  const parts = parseTraceparent(traceparent);
  if (!parts) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parts.traceId,
    spanId: parts.spanId,
    traceFlags: parts.flags,
    isRemote: true,
  });
}

function defined(attributes: SpanAttributes | undefined): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(attributes ?? {})) {
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function wrap(span: OtelSpan): TraceSpan {
  const context = span.spanContext();
  return {
    traceparent: formatTraceparent({
      traceId: context.traceId,
      spanId: context.spanId,
      flags: context.traceFlags,
    }),
    set(attributes) {
      span.setAttributes(defined(attributes));
    },
    end(failure) {
      if (failure !== undefined) {
        span.setAttribute("error.type", failureType(failure));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}

/** Diagnostics logged at most this often; the ones in between are counted. */
const DIAG_EVERY_MS = 10_000;

/**
 * Export problems (a collector down, spans dropped under load) go to the service's log at warn,
 * not to nowhere, and at most one line per 10 s, so a dead collector cannot flood the log.
 */
function routeDiagnostics(logger: Logger): void {
  const log = logger.child({ component: "otel" });
  let last = 0;
  let suppressed = 0;
  const warn = (message: string) => {
    const now = Date.now();
    if (now - last < DIAG_EVERY_MS) {
      suppressed++;
      return;
    }
    log.warn(suppressed > 0 ? { suppressed } : {}, message);
    last = now;
    suppressed = 0;
  };
  diag.setLogger(
    { error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
}

export function createSdkTracing(config: Enabled, logger: Logger): Tracing {
  routeDiagnostics(logger);
  const exporterOptions = {
    url: config.url,
    headers: { ...config.headers },
    timeoutMillis: config.timeoutMs,
  };
  const exporter =
    config.protocol === "http/json"
      ? new JsonExporter(exporterOptions)
      : new ProtobufExporter(exporterOptions);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      ...config.resourceAttributes,
      "service.name": config.serviceName,
    }),
    sampler: samplerOf(config.sampler),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: config.batch.scheduleDelayMs,
        maxQueueSize: config.batch.maxQueueSize,
        maxExportBatchSize: config.batch.maxExportBatchSize,
        exportTimeoutMillis: config.batch.exportTimeoutMs,
      }),
    ],
  });
  const tracer = provider.getTracer("switchyard");
  return {
    enabled: true,
    start(name, options) {
      const span = tracer.startSpan(
        name,
        { kind: KINDS[options.kind ?? "internal"], attributes: defined(options.attributes) },
        parentContext(options.parent),
      );
      return wrap(span);
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

import type { Logger } from "../log/index.ts";
import { type Env, tracingConfigFromEnv } from "./config.ts";

export { type Env, type TracingConfig, tracingConfigFromEnv } from "./config.ts";

/**
 * What a span may say about a job. A closed list on purpose: input text, output, metadata and
 * secrets have no key here, so they cannot reach a trace.
 */
export interface SpanAttributes {
  readonly job_id?: string;
  readonly client_id?: string;
  readonly route?: string;
  /** Executor or callback attempt number. */
  readonly attempt?: number;
  /** What the step came to, as a fixed word (an outcome kind), never free text. */
  readonly outcome?: string;
  readonly "http.request.method"?: string;
  readonly "http.route"?: string;
  readonly "http.response.status_code"?: number;
}

export type SpanKindName = "server" | "client" | "producer" | "consumer" | "internal";

export interface SpanOptions {
  /** The W3C traceparent this span continues; a new trace when absent or malformed. */
  readonly parent?: string | undefined;
  readonly kind?: SpanKindName;
  readonly attributes?: SpanAttributes;
}

export interface TraceSpan {
  /** This span's traceparent, for what it sends on; undefined when tracing is off. */
  readonly traceparent: string | undefined;
  set(attributes: SpanAttributes): void;
  /**
   * Ends the span. A `failure` marks it as an error of that type: an error's `code` or class
   * name, or the given word. Never its message.
   */
  end(failure?: unknown): void;
}

/** The tracer services receive in their deps (docs/operations.md, "Traces"). */
export interface Tracing {
  readonly enabled: boolean;
  start(name: string, options: SpanOptions): TraceSpan;
  /** Sends every ended span now (a service's stop). */
  flush(): Promise<void>;
  /** Flushes and stops exporting. */
  shutdown(): Promise<void>;
}

const NOOP_SPAN: TraceSpan = { traceparent: undefined, set() {}, end() {} };

/** Tracing off: nothing is loaded, a span is one shared object that does nothing. */
export const NO_TRACING: Tracing = {
  enabled: false,
  start: () => NOOP_SPAN,
  flush: async () => {},
  shutdown: async () => {},
};

/** The type of a failure as a span may record it: a code or a class name, never a message. */
export function failureType(failure: unknown): string {
  if (typeof failure === "string") return failure;
  if (failure instanceof Error) {
    const code = (failure as { code?: unknown }).code;
    return typeof code === "string" && code !== "" ? code : failure.name;
  }
  return "error";
}

/**
 * Tracing as the standard OTEL_* variables ask (tracingConfigFromEnv). Without an endpoint it is
 * {@link NO_TRACING} and the OpenTelemetry SDK is never imported.
 */
export async function createTracing(input: {
  readonly env: Env;
  /** service.name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. */
  readonly defaultServiceName: string;
  readonly logger: Logger;
}): Promise<Tracing> {
  const config = tracingConfigFromEnv(input.env, input.defaultServiceName);
  if (!config.enabled) return NO_TRACING;
  const { createSdkTracing } = await import("./sdk.ts");
  const tracing = createSdkTracing(config, input.logger);
  input.logger.info(
    {
      // Without user info or query: an endpoint may carry credentials there.
      endpoint: `${new URL(config.url).origin}${new URL(config.url).pathname}`,
      protocol: config.protocol,
      service_name: config.serviceName,
    },
    "tracing to an OTLP endpoint",
  );
  return tracing;
}

/**
 * Ends `span` when `work` settles (as an error when it rejects), with the attributes `describe`
 * reads off the result, and passes the result on. Without tracing it returns `work` itself.
 */
export function endWhenSettled<T>(
  span: TraceSpan,
  work: Promise<T>,
  describe?: (value: T) => SpanAttributes,
): Promise<T> {
  if (span === NOOP_SPAN) return work;
  return work.then(
    (value) => {
      if (describe) span.set(describe(value));
      span.end();
      return value;
    },
    (err: unknown) => {
      span.end(err);
      throw err;
    },
  );
}

import { ConfigError, type ConfigIssue } from "../config/index.ts";

/** The environment as the CLI passes it (the one module that reads process.env). */
export type Env = Readonly<Record<string, string | undefined>>;

export type OtlpProtocol = "http/protobuf" | "http/json";

export interface SamplerConfig {
  /** The root decision: always_on, always_off or a trace-id ratio. */
  readonly root: "always_on" | "always_off" | "traceidratio";
  /** Follow the caller's sampled flag when there is a parent (the default, parentbased_*). */
  readonly parentBased: boolean;
  /** For traceidratio: the share of traces kept, 0 … 1. */
  readonly ratio: number;
}

/** Tracing as the standard OTEL_* variables configure it; `enabled: false` needs nothing loaded. */
export type TracingConfig =
  | { readonly enabled: false; readonly reason: string }
  | {
      readonly enabled: true;
      /** The full traces URL (…/v1/traces). */
      readonly url: string;
      readonly protocol: OtlpProtocol;
      readonly headers: Readonly<Record<string, string>>;
      readonly timeoutMs: number;
      readonly serviceName: string;
      readonly resourceAttributes: Readonly<Record<string, string>>;
      readonly sampler: SamplerConfig;
      readonly batch: {
        readonly scheduleDelayMs: number;
        readonly maxQueueSize: number;
        readonly maxExportBatchSize: number;
        readonly exportTimeoutMs: number;
      };
    };

const SAMPLERS: Record<string, Omit<SamplerConfig, "ratio">> = {
  always_on: { root: "always_on", parentBased: false },
  always_off: { root: "always_off", parentBased: false },
  traceidratio: { root: "traceidratio", parentBased: false },
  parentbased_always_on: { root: "always_on", parentBased: true },
  parentbased_always_off: { root: "always_off", parentBased: true },
  parentbased_traceidratio: { root: "traceidratio", parentBased: true },
};

/** The spec treats an empty value as unset. */
function read(env: Env, key: string): string | undefined {
  const value = env[key]?.trim();
  return value ? value : undefined;
}

/** `key1=value1,key2=value2` with URL-encoded values (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES). */
function keyValues(
  env: Env,
  key: string,
  issues: ConfigIssue[],
): Record<string, string> | undefined {
  const raw = read(env, key);
  if (raw === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const pair of raw.split(",")) {
    const at = pair.indexOf("=");
    const name = pair.slice(0, at).trim();
    if (at <= 0 || name === "") {
      issues.push({ key, message: "expected key=value pairs separated by commas" });
      return undefined;
    }
    try {
      out[name] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      issues.push({ key, message: `the value of '${name}' is not valid URL encoding` });
      return undefined;
    }
  }
  return out;
}

function integer(env: Env, key: string, fallback: number, issues: ConfigIssue[]): number {
  const raw = read(env, key);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) {
    issues.push({ key, message: `expected a positive whole number, got '${raw}'` });
    return fallback;
  }
  return value;
}

function tracesUrl(env: Env, issues: ConfigIssue[]): string | undefined {
  const specific = read(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const general = read(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const key = specific ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  const raw = specific ?? general;
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    issues.push({ key, message: `'${raw}' is not a URL` });
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    issues.push({ key, message: "OTLP/HTTP needs an http:// or https:// URL" });
    return undefined;
  }
  // The signal-specific endpoint is used as given; the general one gets the signal's path.
  if (specific) return url.toString();
  return `${url.toString().replace(/\/$/, "")}/v1/traces`;
}

function protocol(env: Env, issues: ConfigIssue[]): OtlpProtocol {
  const key = read(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const value = read(env, key) ?? "http/protobuf";
  if (value === "http/protobuf" || value === "http/json") return value;
  issues.push({ key, message: `'${value}' is not supported; use http/protobuf or http/json` });
  return "http/protobuf";
}

function sampler(env: Env, issues: ConfigIssue[]): SamplerConfig {
  const name = read(env, "OTEL_TRACES_SAMPLER") ?? "parentbased_always_on";
  const chosen = SAMPLERS[name];
  if (!chosen) {
    issues.push({
      key: "OTEL_TRACES_SAMPLER",
      message: `'${name}' is not supported; use one of ${Object.keys(SAMPLERS).join(", ")}`,
    });
    return { root: "always_on", parentBased: true, ratio: 1 };
  }
  const arg = read(env, "OTEL_TRACES_SAMPLER_ARG");
  const ratio = arg === undefined ? 1 : Number(arg);
  if (chosen.root === "traceidratio" && !(ratio >= 0 && ratio <= 1)) {
    issues.push({
      key: "OTEL_TRACES_SAMPLER_ARG",
      message: `expected a ratio 0 … 1, got '${arg}'`,
    });
  }
  return { ...chosen, ratio: Number.isFinite(ratio) ? ratio : 1 };
}

/**
 * Reads the standard OpenTelemetry variables. Tracing is on when a traces endpoint is set
 * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT), unless OTEL_SDK_DISABLED is
 * true or OTEL_TRACES_EXPORTER is none. Throws {@link ConfigError} naming every bad variable.
 */
export function tracingConfigFromEnv(env: Env, defaultServiceName: string): TracingConfig {
  if (read(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") {
    return { enabled: false, reason: "OTEL_SDK_DISABLED is true" };
  }
  const issues: ConfigIssue[] = [];
  const exporter = read(env, "OTEL_TRACES_EXPORTER") ?? "otlp";
  if (exporter === "none") return { enabled: false, reason: "OTEL_TRACES_EXPORTER is none" };
  if (exporter !== "otlp") {
    issues.push({
      key: "OTEL_TRACES_EXPORTER",
      message: `'${exporter}' is not supported; use otlp or none`,
    });
  }
  const url = tracesUrl(env, issues);
  if (url === undefined && issues.length === 0) {
    return { enabled: false, reason: "no OTLP endpoint is configured" };
  }
  const headers = {
    ...keyValues(env, "OTEL_EXPORTER_OTLP_HEADERS", issues),
    ...keyValues(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", issues),
  };
  const timeoutKey = read(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
    ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
    : "OTEL_EXPORTER_OTLP_TIMEOUT";
  const config = {
    enabled: true as const,
    url: url ?? "",
    protocol: protocol(env, issues),
    headers,
    timeoutMs: integer(env, timeoutKey, 10_000, issues),
    serviceName: "",
    resourceAttributes: keyValues(env, "OTEL_RESOURCE_ATTRIBUTES", issues) ?? {},
    sampler: sampler(env, issues),
    batch: {
      scheduleDelayMs: integer(env, "OTEL_BSP_SCHEDULE_DELAY", 5_000, issues),
      maxQueueSize: integer(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2_048, issues),
      maxExportBatchSize: integer(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, issues),
      exportTimeoutMs: integer(env, "OTEL_BSP_EXPORT_TIMEOUT", 30_000, issues),
    },
  };
  if (issues.length > 0) throw new ConfigError("environment", issues);
  const serviceName =
    read(env, "OTEL_SERVICE_NAME") ??
    config.resourceAttributes["service.name"] ??
    defaultServiceName;
  return { ...config, serviceName };
}

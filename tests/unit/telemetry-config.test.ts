import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ConfigError } from "../../shared/config/index.ts";
import { NO_TRACING, tracingConfigFromEnv } from "../../shared/telemetry/index.ts";

const ROOT = join(import.meta.dir, "..", "..");

function issuesOf(env: Record<string, string>): string[] {
  try {
    tracingConfigFromEnv(env, "switchyard");
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((i) => i.key);
  }
  throw new Error("expected a ConfigError");
}

describe("tracing configuration from OTEL_* variables", () => {
  test("off without an endpoint, with OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none", () => {
    expect(tracingConfigFromEnv({}, "switchyard").enabled).toBe(false);
    expect(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "" }, "s").enabled).toBe(false);
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(tracingConfigFromEnv({ ...endpoint, OTEL_SDK_DISABLED: "true" }, "s").enabled).toBe(
      false,
    );
    expect(tracingConfigFromEnv({ ...endpoint, OTEL_TRACES_EXPORTER: "none" }, "s").enabled).toBe(
      false,
    );
  });

  test("the general endpoint gets /v1/traces; the traces endpoint is used as given", () => {
    const general = tracingConfigFromEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" },
      "switchyard-ingress",
    );
    expect(general).toMatchObject({
      enabled: true,
      url: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
      serviceName: "switchyard-ingress",
      timeoutMs: 10_000,
      sampler: { root: "always_on", parentBased: true, ratio: 1 },
    });
    const specific = tracingConfigFromEnv(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector/custom/path",
      },
      "s",
    );
    expect(specific).toMatchObject({ url: "https://collector/custom/path" });
  });

  test("headers, timeout, protocol, service name, resource attributes, sampler and batching", () => {
    const config = tracingConfigFromEnv(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc, x-tenant=a",
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-tenant=b",
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "2500",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
        OTEL_RESOURCE_ATTRIBUTES: "service.name=from-resource,deployment.environment=prod",
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0.25",
        OTEL_BSP_SCHEDULE_DELAY: "200",
      },
      "switchyard",
    );
    expect(config).toMatchObject({
      headers: { authorization: "Bearer abc", "x-tenant": "b" },
      timeoutMs: 2500,
      protocol: "http/json",
      serviceName: "from-resource",
      resourceAttributes: { "deployment.environment": "prod" },
      sampler: { root: "traceidratio", parentBased: true, ratio: 0.25 },
      batch: { scheduleDelayMs: 200, maxQueueSize: 2048 },
    });
    const named = tracingConfigFromEnv(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_SERVICE_NAME: "hub-a",
        OTEL_RESOURCE_ATTRIBUTES: "service.name=from-resource",
      },
      "switchyard",
    );
    expect(named).toMatchObject({ serviceName: "hub-a" });
  });

  test("bad values are refused naming each variable", () => {
    expect(issuesOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318 nope" })).toEqual([
      "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]);
    expect(issuesOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://collector:4317" })).toEqual([
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]);
    expect(
      issuesOf({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        OTEL_EXPORTER_OTLP_HEADERS: "no-equals-sign",
        OTEL_EXPORTER_OTLP_TIMEOUT: "soon",
        OTEL_TRACES_SAMPLER: "sometimes",
        OTEL_BSP_MAX_QUEUE_SIZE: "-1",
      }),
    ).toEqual([
      "OTEL_EXPORTER_OTLP_HEADERS",
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_TIMEOUT",
      "OTEL_TRACES_SAMPLER",
      "OTEL_BSP_MAX_QUEUE_SIZE",
    ]);
    expect(
      issuesOf({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_TRACES_SAMPLER: "traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "2",
      }),
    ).toEqual(["OTEL_TRACES_SAMPLER_ARG"]);
    expect(issuesOf({ OTEL_TRACES_EXPORTER: "zipkin" })).toEqual(["OTEL_TRACES_EXPORTER"]);
  });

  test("without an endpoint the SDK is never loaded and spans are one shared no-op", () => {
    const script = `
      const { createTracing } = await import(${JSON.stringify(join(ROOT, "shared/telemetry/index.ts"))});
      const { createLogger } = await import(${JSON.stringify(join(ROOT, "shared/log/index.ts"))});
      const logger = createLogger({ level: "silent", service: "probe" });
      const sdkLoaded = () => Object.keys(require.cache).some((k) => k.includes("@opentelemetry/sdk-trace"));
      const off = await createTracing({ env: {}, defaultServiceName: "probe", logger });
      const a = off.start("x", {}); const b = off.start("y", { parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" });
      const offLoaded = sdkLoaded();
      const on = await createTracing({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" }, defaultServiceName: "probe", logger });
      console.log(JSON.stringify({ off: off.enabled, offLoaded, same: a === b, traceparent: a.traceparent ?? null, on: on.enabled, onLoaded: sdkLoaded() }));
      await on.shutdown();
    `;
    const run = Bun.spawnSync([process.execPath, "-e", script], { cwd: ROOT, stderr: "pipe" });
    expect(run.stderr.toString()).toBe("");
    expect(JSON.parse(run.stdout.toString())).toEqual({
      off: false,
      offLoaded: false,
      same: true,
      traceparent: null,
      on: true,
      onLoaded: true,
    });
    expect(NO_TRACING.enabled).toBe(false);
  });
});

import { createHash } from "node:crypto";
import {
  DiscardPolicy,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { ensureDurable, ensureStream } from "../bus/index.ts";
import { RunSummary } from "../domain/index.ts";

/** Work-queue stream of tasks, one subject per route: sy.task.<route>. */
export const TASK_STREAM = "SWITCHYARD_TASKS";
export const TASK_SUBJECT_ROOT = "sy.task";

/**
 * Header of a task from a hub of several partitions: the partition count, from which the worker
 * finds the stream and subjects of the job's status events (EventLayout). Absent: one partition.
 * It travels with the task because workers may not read sy_meta (it holds the hub's secrets).
 */
export const PARTITIONS_HEADER = "Switchyard-Partitions";

/** The subject a route's tasks are published to. Route keys are subject-safe (config schema). */
export function taskSubject(route: string): string {
  return `${TASK_SUBJECT_ROOT}.${route}`;
}

/**
 * Durable consumer name of a route's work queue. Consumer names may not contain dots, and a plain
 * replacement could make two route keys collide ("a.b" and "a_b"), so a short hash is appended.
 */
export function taskConsumerName(route: string): string {
  const digest = createHash("sha256").update(route).digest("hex").slice(0, 8);
  return `task_${route.replaceAll(".", "_").slice(0, 180)}_${digest}`;
}

/** One tool definition as the tool-set store keeps it; opaque to the executor. */
const ToolDefinition = Type.Record(Type.String(), Type.Unknown());

/**
 * The task as it sits in the work queue. HTTP executors receive it without `client_id` (see
 * toHttpTask). `job_id` is the executor's idempotency key: a task can arrive more than once.
 */
export const TaskSchema = Type.Object(
  {
    job_id: Type.String({ minLength: 1, maxLength: 128 }),
    client_id: Type.String({ minLength: 1, maxLength: 128 }),
    route: Type.String({ minLength: 1, maxLength: 128 }),
    input: Type.String(),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** RFC 3339: when the run was accepted. */
    created_at: Type.String(),
    /** RFC 3339: the job errors with deadline_exceeded after this instant. */
    deadline: Type.String(),
    tools: Type.Optional(Type.Array(ToolDefinition)),
    /**
     * The route's published tool set. A set too large to travel inside a task message is left
     * out of `tools` and read from the tool-set store by whoever runs the task (the HTTP
     * dispatcher before it POSTs, the worker SDK before it calls the handler).
     */
    tool_set: Type.Optional(
      Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
    ),
    /**
     * The job's `.job` subject sequence when the task was queued: a worker's first append expects
     * it, so a first delivery needs no read. Absent on 0.1 tasks (the worker reads).
     */
    expected_seq: Type.Optional(Type.Integer({ minimum: 0 })),
    /** The run summary the job's final event carries to the callback service (hub-internal). */
    run: Type.Optional(RunSummary),
  },
  { additionalProperties: false },
);
export type Task = Static<typeof TaskSchema>;

/** What an HTTP executor is POSTed: the task without the hub-internal fields. */
export type HttpTask = Omit<Task, "client_id" | "expected_seq" | "run" | "tool_set">;

/** Drops the hub-internal fields of a task for an HTTP executor. */
export function toHttpTask(task: Task): HttpTask {
  const { client_id: _client, expected_seq: _seq, run: _run, tool_set: _set, ...rest } = task;
  return rest;
}

/** Reads a published tool set by name (shared/tools' ToolSetStore fits). */
export interface ToolSetReader {
  getToolSet(name: string): Promise<readonly object[] | undefined>;
}

/**
 * The task with its tools, reading the tool set when the task names one it did not carry.
 * Throws when the set is gone (the caller fails the job as tool_set_unknown or retries).
 */
export async function withTools(task: Task, reader: ToolSetReader): Promise<Task> {
  if (task.tools !== undefined || task.tool_set === undefined) return task;
  const tools = await reader.getToolSet(task.tool_set.name);
  if (tools === undefined) throw new Error(`tool set ${task.tool_set.name} is not published`);
  return { ...task, tools: tools.map((t) => ({ ...(t as Record<string, unknown>) })) };
}

const taskChecker = TypeCompiler.Compile(TaskSchema);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Serialises a task for the work queue. */
export function encodeTask(task: Task): Uint8Array {
  return encoder.encode(JSON.stringify(task));
}

/** Parses a task; undefined when the bytes are not a valid task (the message is terminated). */
export function decodeTask(bytes: Uint8Array): Task | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(bytes));
    return taskChecker.Check(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

const nanos = (ms: number) => ms * 1_000_000;

export interface TaskStreamOptions {
  readonly replicas: number;
  /**
   * Nats-Msg-Id window of the task stream. Tasks are published with the job id as message id,
   * so a republish after an executor crash inside this window is dropped by the server.
   */
  readonly duplicateWindowMs: number;
}

/**
 * Creates (or updates) the work-queue stream. WorkQueue retention deletes a task once acked, so
 * the stream only holds work not yet finished: a burst queues here, not in process memory.
 */
export async function ensureTaskStream(
  jsm: JetStreamManager,
  options: TaskStreamOptions,
): Promise<void> {
  await ensureStream(jsm, {
    name: TASK_STREAM,
    subjects: [`${TASK_SUBJECT_ROOT}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    discard: DiscardPolicy.New,
    num_replicas: options.replicas,
    duplicate_window: nanos(options.duplicateWindowMs),
  });
}

export interface RouteConsumerOptions {
  readonly route: string;
  /** The route's cap: tasks delivered and not yet acked, over every puller. */
  readonly maxAckPending: number;
  readonly ackWaitMs: number;
  /** -1 for unlimited (HTTP routes count their own attempts). */
  readonly maxDeliver: number;
}

/** Creates or updates a route's durable work-queue consumer. */
export async function ensureRouteConsumer(
  jsm: JetStreamManager,
  options: RouteConsumerOptions,
): Promise<string> {
  const name = taskConsumerName(options.route);
  await ensureDurable(jsm, {
    stream: TASK_STREAM,
    name,
    filterSubject: taskSubject(options.route),
    ackWaitMs: options.ackWaitMs,
    maxAckPending: options.maxAckPending,
    maxDeliver: options.maxDeliver,
  });
  return name;
}

import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { readStream } from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { waitFor } from "../helpers/wait.ts";

/** One request an executor test server received. */
export interface ReceivedTask {
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly json: { job_id: string; route: string; input: string; [k: string]: unknown };
}

export interface TaskServer extends AsyncDisposable {
  readonly url: string;
  readonly received: ReceivedTask[];
  /** Requests received for one job. */
  forJob(jobId: string): ReceivedTask[];
  stop(): Promise<void>;
}

/**
 * A real HTTP executor on 127.0.0.1 that records every task and answers with `answer`.
 * `answer` gets the task and how many times this job was received (1 on the first POST).
 */
export function startTaskServer(
  answer: (task: ReceivedTask, nth: number) => Response | Promise<Response>,
): TaskServer {
  const received: ReceivedTask[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = await request.text();
      const headers: Record<string, string> = {};
      request.headers.forEach((value, key) => {
        headers[key] = value;
      });
      const task: ReceivedTask = { headers, body, json: JSON.parse(body) };
      received.push(task);
      const nth = received.filter((t) => t.json.job_id === task.json.job_id).length;
      return answer(task, nth);
    },
  });
  const stop = async () => {
    await server.stop(true);
  };
  return {
    url: `http://127.0.0.1:${server.port}/task`,
    received,
    forJob: (jobId) => received.filter((t) => t.json.job_id === jobId),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** Every status event of a job, in stream order. */
export async function jobEvents(
  nc: NatsConnection,
  clientId: string,
  jobId: string,
): Promise<JobEvent[]> {
  const out: JobEvent[] = [];
  for await (const record of readStream(jetstream(nc), {
    filterSubject: `sy.evt.${clientId}.${jobId}.job`,
  })) {
    out.push(JSON.parse(new TextDecoder().decode(record.data)) as JobEvent);
  }
  return out;
}

/** The event types of a job, e.g. ["job.dispatched", "job.done"]. */
export async function eventTypes(
  nc: NatsConnection,
  clientId: string,
  jobId: string,
): Promise<string[]> {
  return (await jobEvents(nc, clientId, jobId)).map((e) => e.type);
}

/** The GET /jobs record once its status is final. */
export async function waitFinal(
  get: (path: string) => Promise<Response>,
  jobId: string,
  timeoutMs = 15_000,
): Promise<Record<string, unknown>> {
  return await waitFor(
    `job ${jobId} to reach a final status`,
    async () => {
      const res = await get(`/jobs/${jobId}`);
      if (res.status !== 200) return undefined;
      const body = (await res.json()) as Record<string, unknown>;
      return ["done", "error", "rejected"].includes(String(body.status)) ? body : undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
}

/** A child process with its output captured as it arrives. */
export interface Child {
  readonly proc: ReturnType<typeof Bun.spawn>;
  output(): string;
  /** SIGKILL (no chance to clean up) and wait for the exit. */
  kill(): Promise<void>;
}

async function pump(stream: ReadableStream<Uint8Array>, sink: { text: string }): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) sink.text += decoder.decode(chunk, { stream: true });
}

/** Spawns a Bun script of this repo with the given arguments and environment. */
export function spawnBun(args: readonly string[], env: Record<string, string> = {}): Child {
  const sink = { text: "" };
  const proc = Bun.spawn([process.execPath, ...args], {
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  void pump(proc.stdout, sink);
  void pump(proc.stderr, sink);
  return {
    proc,
    output: () => sink.text,
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

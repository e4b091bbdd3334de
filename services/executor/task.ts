import type { RouteConfig } from "../../shared/config/index.ts";
import type { StatusIntent } from "../../shared/domain/index.ts";
import { type Task, type ToolSetReader, withTools } from "../../shared/worker/index.ts";
import type { AdmittedJob } from "./kinds/kind.ts";

export type { ToolSetReader } from "../../shared/worker/index.ts";

/**
 * Largest tool set carried inside a task message (JSON bytes). A larger one travels as a
 * reference (`tool_set`), so a task never approaches NATS's max_payload (1 MiB by default).
 */
export const INLINE_TOOLS_LIMIT = 256 * 1024;

export interface TaskBuilder {
  /**
   * The task an executor receives for an admitted job, or job.rejected tool_set_unknown when the
   * route names a tool set that is not published. The caller adds `expected_seq` when it queues
   * the task (a worker's first append expects it).
   */
  build(job: AdmittedJob): Promise<Task | StatusIntent>;
  /** The task with its tools, for an executor that needs them inline (an HTTP POST). */
  withTools(task: Task): Promise<Task>;
}

/** Builds tasks; reads a route's tool set only when the route names one. */
export function createTaskBuilder(toolSets: ToolSetReader): TaskBuilder {
  const tools = async (route: RouteConfig) => {
    if (route.tool_set === undefined) return { found: true, tools: undefined } as const;
    const found = await toolSets.getToolSet(route.tool_set);
    if (found === undefined) return { found: false } as const;
    const inline = JSON.stringify(found).length <= INLINE_TOOLS_LIMIT;
    return {
      found: true,
      tools: inline ? found.map((t) => ({ ...(t as Record<string, unknown>) })) : undefined,
    } as const;
  };
  return {
    withTools: (task) => withTools(task, toolSets),
    async build(job) {
      const { run, route } = job;
      const toolSet = await tools(route);
      if (!toolSet.found) {
        return {
          type: "job.rejected",
          data: { code: "tool_set_unknown", message: "The route's tool set is not published." },
        };
      }
      return {
        job_id: run.job_id,
        client_id: run.client_id,
        route: route.key,
        input: run.data.input,
        ...(run.data.metadata === undefined ? {} : { metadata: { ...run.data.metadata } }),
        created_at: run.occurred_at,
        deadline: new Date(job.deadlineAt).toISOString(),
        ...(toolSet.tools === undefined ? {} : { tools: toolSet.tools }),
        ...(route.tool_set === undefined ? {} : { tool_set: { name: route.tool_set } }),
        ...(job.context.summary === undefined ? {} : { run: job.context.summary }),
      };
    },
  };
}

/** True when the builder answered with a refusal rather than a task. */
export function isRefusal(built: Task | StatusIntent): built is StatusIntent {
  return "type" in built && "data" in built && !("job_id" in built);
}

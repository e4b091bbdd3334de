import type { RouteConfig } from "../../shared/config/index.ts";
import type { StatusIntent } from "../../shared/domain/index.ts";
import type { Task } from "../../shared/worker/index.ts";
import type { AdmittedJob } from "./kinds/kind.ts";

/** Reads a compiled tool set by name (shared/tools' ToolSetStore fits). */
export interface ToolSetReader {
  getToolSet(name: string): Promise<readonly object[] | undefined>;
}

export interface TaskBuilder {
  /**
   * The task an executor receives for an admitted job, or job.rejected tool_set_unknown when the
   * route names a tool set that is not published. The caller adds `expected_seq` when it queues
   * the task (a worker's first append expects it).
   */
  build(job: AdmittedJob): Promise<Task | StatusIntent>;
}

/** Builds tasks; reads a route's tool set only when the route names one. */
export function createTaskBuilder(toolSets: ToolSetReader): TaskBuilder {
  const tools = async (route: RouteConfig) => {
    if (route.tool_set === undefined) return { found: true, tools: undefined } as const;
    const found = await toolSets.getToolSet(route.tool_set);
    if (found === undefined) return { found: false } as const;
    return { found: true, tools: found.map((t) => ({ ...t })) } as const;
  };
  return {
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
        ...(job.context.summary === undefined ? {} : { run: job.context.summary }),
      };
    },
  };
}

/** True when the builder answered with a refusal rather than a task. */
export function isRefusal(built: Task | StatusIntent): built is StatusIntent {
  return "type" in built && "data" in built && !("job_id" in built);
}

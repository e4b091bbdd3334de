import { Elysia } from "elysia";
import { classifyNatsError } from "../../../shared/bus/index.ts";
import { toJobResource } from "../../../shared/domain/index.ts";
import { JobNotFoundError, NotFoundError } from "../../../shared/errors/index.ts";
import { JOB_ID_PATTERN } from "../../../shared/ids/index.ts";
import type { JobReader } from "../../../shared/jobs/index.ts";
import type { AuthenticateClient } from "../client-auth.ts";
import type { JobsApi } from "../jobs-api.ts";
import { json, requireNats } from "./respond.ts";

export interface JobsPluginDeps {
  readonly authenticate: AuthenticateClient;
  readonly reader: JobReader;
  /** False while NATS is disconnected: answer 503 at once instead of waiting for a timeout. */
  readonly natsConnected: () => boolean;
  /** GET /jobs and POST /jobs/{job_id}/cancel (jobs-api.ts); absent: 404. */
  readonly jobsApi?: JobsApi;
}

/** GET /jobs/{job_id}, GET /jobs and POST /jobs/{job_id}/cancel: a client's own jobs. */
export function jobsPlugin(deps: JobsPluginDeps) {
  const { authenticate } = deps;
  return new Elysia({ name: "ingress-jobs", normalize: false })
    .get("/jobs/:job_id", async ({ request, params, server }) => {
      const client = await authenticate(request, server);
      const notFound = () =>
        new JobNotFoundError({ detail: "No job with this id exists for this client." });
      if (!JOB_ID_PATTERN.test(params.job_id)) throw notFound();
      requireNats(deps.natsConnected);
      const view = await deps.reader
        .get({ client_id: client.id, job_id: params.job_id })
        .catch((err: unknown) => {
          throw classifyNatsError(err) ?? err;
        });
      if (!view) throw notFound();
      return json(toJobResource(view), 200);
    })
    .get("/jobs", async ({ request, server }) => {
      const client = await authenticate(request, server);
      if (!deps.jobsApi) throw new NotFoundError({ detail: "Listing jobs is not enabled here." });
      return deps.jobsApi.list(request, client);
    })
    .post(
      "/jobs/:job_id/cancel",
      async ({ request, params, server }) => {
        const client = await authenticate(request, server);
        if (!deps.jobsApi) throw new NotFoundError({ detail: "Cancel is not enabled here." });
        requireNats(deps.natsConnected);
        return deps.jobsApi.cancel(request, client, params.job_id);
      },
      { parse: "none" },
    );
}

import { parseArgs } from "node:util";
import { requestRedelivery } from "../../shared/callbacks/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";

export interface CallbacksCommandDeps {
  /** The hub's connection (main.ts finds it; nothing is created). */
  readonly hub: HubConnection;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Recorded in the redelivery event (the operator's login name). */
  readonly requestedBy?: string;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

/**
 * `switchyard callbacks redeliver <job_id>`: asks the callback service to send a settled callback
 * again (same webhook-id, fresh retry schedule). Exit 0 when requested, 1 when refused. The
 * arguments were checked by main.ts: `<job_id> [--client <client_id>]`.
 */
export async function runCallbacksCommand(
  args: readonly string[],
  deps: CallbacksCommandDeps,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: { client: { type: "string" } },
    allowPositionals: true,
    strict: true,
  });
  const jobId = positionals[0] as string;
  const clientFlag = values.client;
  const hub = deps.hub;
  const result = await requestRedelivery(
    { js: hub.js, jsm: hub.jsm, layout: hub.layout, clock: deps.clock, ids: deps.ids },
    jobId,
    {
      ...(clientFlag ? { clientId: clientFlag } : {}),
      ...(deps.requestedBy ? { requestedBy: deps.requestedBy } : {}),
    },
  );
  if (result.kind === "refused") {
    deps.stderr(`switchyard: not redelivered (${result.reason}): ${result.message}\n`);
    return 1;
  }
  deps.stdout(
    `redelivery of the callback of ${jobId} (client ${result.clientId}) requested; the callback service sends it with the same webhook-id\n`,
  );
  return 0;
}

import { requestRedelivery } from "../../shared/callbacks/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { Config } from "../../shared/config/index.ts";
import { connectHub } from "../../shared/hub/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";

export interface CallbacksCommandDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Recorded in the redelivery event (the operator's login name). */
  readonly requestedBy?: string;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

const USAGE = "usage: switchyard callbacks redeliver <job_id> [--client <client_id>]";

/**
 * `switchyard callbacks redeliver <job_id>`: asks the callback service to send a settled callback
 * again (same webhook-id, fresh retry schedule). Exit 0 when requested, 1 when refused, 2 on usage.
 */
export async function runCallbacksCommand(
  args: readonly string[],
  deps: CallbacksCommandDeps,
): Promise<number> {
  const [sub, jobId, ...rest] = args;
  const clientFlag = rest[0] === "--client" ? rest[1] : undefined;
  if (sub !== "redeliver" || !jobId || (rest.length > 0 && !clientFlag)) {
    deps.stderr(`${USAGE}\n`);
    return 2;
  }
  const hub = await connectHub(deps.config, deps.logger, "callbacks-cli");
  try {
    const result = await requestRedelivery(
      { js: hub.js, jsm: hub.jsm, clock: deps.clock, ids: deps.ids },
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
  } finally {
    await hub.drain();
  }
}

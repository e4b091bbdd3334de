import { importPKCS8 } from "jose";
import type { Clock } from "../../shared/clock/index.ts";
import { type Config, parseDuration } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { type Checkpointer, createCheckpointer } from "../audit/index.ts";

/**
 * Starts periodic signed audit checkpoints when `audit.signing_key_pem` is configured (they run
 * beside the projector). Without a key there are none, and the log says so once.
 */
export async function startAuditCheckpoints(deps: {
  hub: HubConnection;
  config: Config;
  clock: Clock;
  logger: Logger;
}): Promise<{ stop(): Promise<void> } | undefined> {
  const { audit } = deps.config;
  if (!audit.signing_key_pem) {
    deps.logger.info("audit checkpoints off: audit.signing_key_pem is not set");
    return undefined;
  }
  const signingKey = await importPKCS8(audit.signing_key_pem, "EdDSA");
  const { layout } = deps.hub;
  // One chain per partition: each partition's stream is sealed on its own.
  const checkpointers: Checkpointer[] = [];
  for (let partition = 0; partition < layout.partitions; partition++) {
    checkpointers.push(
      createCheckpointer({
        js: deps.hub.js,
        jsm: deps.hub.jsm,
        layout,
        partition,
        signingKey,
        keyId: audit.key_id,
        clock: deps.clock,
        logger: deps.logger.child({ component: "audit", ...(partition > 0 ? { partition } : {}) }),
      }),
    );
  }
  // One timer seals every partition in turn: a process wakes once per interval, not once per
  // partition. A round still running when the next is due is not overlapped.
  let sealing: Promise<void> | undefined;
  const sealAll = async () => {
    for (const checkpointer of checkpointers) {
      await checkpointer.runOnce().catch((err: unknown) => {
        deps.logger.warn({ err: (err as Error).message }, "audit checkpoint failed; will retry");
      });
    }
  };
  const timer = setInterval(() => {
    sealing ??= sealAll().finally(() => {
      sealing = undefined;
    });
  }, parseDuration(audit.checkpoint_interval));
  return {
    stop: async () => {
      clearInterval(timer);
      await sealing;
      await Promise.all(checkpointers.map((c) => c.stop()));
    },
  };
}

/**
 * The signals of a long-running process, trapped before anything starts. Trapped only once the
 * services were up, a SIGTERM during start-up killed the process with its default action (exit
 * 143) while the ingress already accepted runs, and a SIGHUP killed it outright.
 */
import type { Logger } from "../../shared/log/index.ts";

/** What the trap drives once the services run. */
export interface SignalTargets {
  /** Graceful stop; resolves when everything stopped. */
  stop(): Promise<void>;
  /** Reloads the configuration; undefined where there is no file to reload (demo mode). */
  readonly reload?: (reason: string) => void;
}

export interface SignalTrap {
  /** The services run: a stop or reload requested during start-up happens now. */
  attach(targets: SignalTargets): void;
}

export interface SignalTrapDeps {
  readonly logger: Logger;
  /** How long a graceful stop may take before the process exits 1. */
  readonly shutdownTimeoutMs: number;
  /** Tests replace it; the default ends the process. */
  readonly exit?: (code: number) => void;
}

/**
 * SIGINT/SIGTERM: graceful stop within `shutdownTimeoutMs`, exit 0. One that arrives during
 * start-up is held, with its deadline already running, until the services run, and then carried
 * out: start-up may have accepted runs that a plain exit would leave half-done. SIGHUP during
 * start-up reloads once the services run.
 */
export function trapSignals(deps: SignalTrapDeps): SignalTrap {
  const { logger } = deps;
  const exit = deps.exit ?? ((code: number) => process.exit(code));
  let targets: SignalTargets | undefined;
  let stopSignal: string | undefined;
  let reloadPending = false;

  const carryOutStop = (running: SignalTargets) => {
    running
      .stop()
      .then(() => {
        logger.info("stopped");
        exit(0);
      })
      .catch((err: unknown) => {
        logger.error({ err }, "shutdown failed");
        exit(1);
      });
  };
  const onStop = (signal: string) => {
    if (stopSignal) return;
    stopSignal = signal;
    const phase = targets ? "" : " (during start-up: once the services run)";
    logger.info({ signal }, `shutting down: intake stopped, finishing in-flight work${phase}`);
    // Not unref'd: a stop stuck on a promise nothing will settle would otherwise let the process
    // end without saying so.
    setTimeout(() => {
      logger.error("shutdown took too long; exiting");
      exit(1);
    }, deps.shutdownTimeoutMs);
    if (targets) carryOutStop(targets);
  };
  const onReload = () => {
    if (stopSignal) return;
    if (!targets) {
      reloadPending = true;
      logger.info("SIGHUP during start-up: reloading once the services run");
      return;
    }
    if (!targets.reload) logger.warn("SIGHUP: no config file to reload (demo mode)");
    else targets.reload("SIGHUP");
  };
  process.on("SIGINT", () => onStop("SIGINT"));
  process.on("SIGTERM", () => onStop("SIGTERM"));
  process.on("SIGHUP", onReload);

  return {
    attach(running) {
      targets = running;
      if (stopSignal) carryOutStop(running);
      else if (reloadPending) onReload();
    },
  };
}

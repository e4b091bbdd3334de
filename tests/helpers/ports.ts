import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The lowest port the kernel hands out to outgoing connections (their local ports). */
function ephemeralLow(): number {
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/);
    const n = Number(low);
    return Number.isInteger(n) && n > 20_000 ? n : 32_768;
  } catch {
    return 32_768;
  }
}

const LOWEST = 20_000;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/**
 * A free loopback port below the kernel's ephemeral range, for a server a test stops and starts
 * again on the same port. A port from the ephemeral range (what port 0 gives) can meanwhile become
 * the local port of one of the many outgoing connections a test opens, and the restart then fails
 * with "address already in use" (seen once in CI with a nats-server node of the cluster test).
 * Below the range the kernel never picks it for a connection.
 */
export async function restartablePort(): Promise<number> {
  const high = ephemeralLow();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (high - LOWEST));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free loopback port between ${LOWEST} and ${high}`);
}

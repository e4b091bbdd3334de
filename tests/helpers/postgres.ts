import { randomBytes } from "node:crypto";
import { SQL } from "bun";

/** The machine's PostgreSQL (Debian package, trust auth for postgres on 127.0.0.1:5432). */
export const POSTGRES_ADMIN_URL =
  process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase extends AsyncDisposable {
  readonly url: string;
  drop(): Promise<void>;
}

/**
 * Creates a database of its own for a test file and drops it afterwards. Fails loudly with the
 * start hint when PostgreSQL is not running.
 */
export async function createTestDatabase(prefix = "sy_test"): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = new SQL(POSTGRES_ADMIN_URL, { max: 1 });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } catch (err) {
    await admin.close();
    throw new Error(
      `PostgreSQL at ${POSTGRES_ADMIN_URL} is not reachable (${(err as Error).message}); start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`,
    );
  }
  const url = POSTGRES_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.close();
  };
  return { url, drop, [Symbol.asyncDispose]: drop };
}

/**
 * `switchyard permissions` (services/cli/permissions/): the committed permissions.conf files are
 * its P = 1 output, and at P > 1 every per-partition entry names each partition's stream, bucket
 * and subjects, never the single-partition ones.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import {
  NATS_ROLES,
  natsPermissions,
  passwordVariable,
} from "../../services/cli/permissions/render.ts";
import { createEventLayout, InvalidPartitionsError } from "../../shared/jobs/index.ts";

const ROOT = join(import.meta.dir, "../..");
const committed = (path: string) => Bun.file(join(ROOT, path)).text();

/** The entries of one role's publish allow (or deny) list. */
function entries(text: string, role: string, list: "allow" | "deny"): string[] {
  const name = role.toUpperCase().replaceAll("-", "_");
  const block = text.split(`${name}_PERMISSIONS = {`)[1]?.split("\n}\n")[0] ?? "";
  const publish = block.split("subscribe:")[0] ?? "";
  const body = publish.split(`${list}: [`)[1]?.split("]")[0] ?? "";
  return [...body.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
}

describe("permissions.conf from the layout", () => {
  test("deploy/nats and deploy/k8s/base hold exactly the P = 1 output", async () => {
    const generated = natsPermissions(1);
    expect(await committed("deploy/nats/permissions.conf")).toBe(generated);
    expect(await committed("deploy/k8s/base/permissions.conf")).toBe(generated);
  });

  test("P = 3: each partition's stream, view bucket and subjects, none of the single log's", () => {
    const text = natsPermissions(3);
    const layout = createEventLayout(3);
    for (let p = 0; p < 3; p++) {
      const stream = layout.stream(p);
      expect(entries(text, "ingress", "allow")).toContain(`sy.evt.p${p}.*.*.run`);
      expect(entries(text, "ingress", "deny")).toContain(
        `$JS.API.CONSUMER.CREATE.${stream}.executor`,
      );
      expect(entries(text, "projector", "allow")).toEqual(
        expect.arrayContaining([
          `$KV.${layout.viewBucket(p)}.>`,
          layout.checkpointSubject(p),
          `$JS.API.CONSUMER.MSG.NEXT.${stream}.projector`,
        ]),
      );
      expect(entries(text, "indexer", "allow")).toContain(`$JS.ACK.${stream}.index.>`);
      expect(entries(text, "executor", "allow")).toContain(`sy.evt.p${p}.*.*.job`);
      expect(entries(text, "callback", "allow")).toContain(`sy.evt.p${p}.*.*.cb`);
      expect(entries(text, "worker", "allow")).toContain(`$JS.API.DIRECT.GET.${stream}.>`);
      expect(entries(text, "auditor", "allow")).toContain(
        `$JS.API.DIRECT.GET.KV_${layout.viewBucket(p)}.>`,
      );
    }
    const all = NATS_ROLES.flatMap((r) => [
      ...entries(text, r, "allow"),
      ...entries(text, r, "deny"),
    ]);
    for (const single of all.filter((e) =>
      /SWITCHYARD_EVENTS(\.|$)|KV_sy_jobs(\.|$)|sy_jobs\.|^sy\.evt\.\*|^sy\.audit\.checkpoint/.test(
        e,
      ),
    )) {
      throw new Error(`a single-partition name at P = 3: ${single}`);
    }
  });

  test("only the projector (alone or in read-models) writes views; only the ingress appends run.requested; the auditor writes nothing", () => {
    const text = natsPermissions(4);
    for (const role of NATS_ROLES.filter((r) => r !== "admin")) {
      const allow = entries(text, role, "allow");
      expect(allow.some((e) => e.startsWith("$KV.sy_jobs"))).toBe(
        role === "projector" || role === "read-models",
      );
      expect(allow.some((e) => /^sy\.evt\..*\.run$/.test(e))).toBe(role === "ingress");
      expect(allow.some((e) => /^\$JS\.API\.STREAM\.(CREATE|UPDATE|DELETE|PURGE)/.test(e))).toBe(
        false,
      );
    }
    expect(entries(text, "auditor", "allow").every((e) => e.startsWith("$JS.API."))).toBe(true);
  });

  test("every role has a user; a partition count outside 1..256 is refused by name", () => {
    const text = natsPermissions(2);
    for (const role of NATS_ROLES) {
      expect(text).toContain(`{ user: ${role}, password: $${passwordVariable(role)},`);
    }
    for (const bad of [0, 257, 1.5]) {
      expect(() => natsPermissions(bad)).toThrow(InvalidPartitionsError);
      expect(() => natsPermissions(bad)).toThrow("nats.partitions");
    }
  });

  test.each([1, 3])(
    "P = %d: read-models may do exactly what the projector or the indexer may, both durables its own",
    (partitions) => {
      const text = natsPermissions(partitions);
      const layout = createEventLayout(partitions);
      const union = new Set([
        ...entries(text, "projector", "allow"),
        ...entries(text, "indexer", "allow"),
      ]);
      const allow = entries(text, "read-models", "allow");
      expect(allow.length).toBe(new Set(allow).size); // each entry once
      expect(new Set(allow)).toEqual(union);
      // The projector's denies but those of the indexer's durable, which is read-models' own.
      const deny = entries(text, "read-models", "deny");
      const own = (e: string) => /\.index(\.>)?$/.test(e);
      expect(deny).toEqual(entries(text, "projector", "deny").filter((e) => !own(e)));
      expect(deny.length).toBeGreaterThan(0);
      for (let p = 0; p < partitions; p++) {
        const stream = layout.stream(p);
        for (const durable of ["projector", "index"]) {
          expect(allow).toEqual(
            expect.arrayContaining([
              `$JS.API.CONSUMER.DELETE.${stream}.${durable}`,
              `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${durable}`,
              `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`,
            ]),
          );
          expect(deny.some((e) => e.endsWith(`${stream}.${durable}`))).toBe(false);
        }
        expect(deny).toContain(`$JS.API.CONSUMER.MSG.NEXT.${stream}.executor`);
      }
      expect(text).toContain('subscribe: { allow: ["_INBOX_read-models.>"] }');
    },
  );
});

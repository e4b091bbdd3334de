import { describe, expect, test } from "bun:test";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IStatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";
import { type NatsRole, passwordVariable } from "../../services/cli/permissions/render.ts";
import { HUB_DEPLOYMENT_NAMES, named, OVERLAYS, render } from "./k8s.ts";

// Who each pod is to NATS (deploy/nats/permissions.conf): its own user and only its own password.
// The read models' pods run the projector and the indexer in one process: the read-models user.

/** The env var of a pod's first container. */
function envOf(spec: IPodSpec | undefined, name: string): string | undefined {
  return spec?.containers[0]?.env?.find((e) => e.name === name)?.value;
}

describe.each(OVERLAYS)("NATS identities in %s", (overlay) => {
  test("each Deployment is its own NATS user, mounting only its own password; the setup Job is the admin", () => {
    const objects = render(overlay);
    const pods: [NatsRole, IPodSpec | undefined][] = [
      ...HUB_DEPLOYMENT_NAMES.map((svc): [NatsRole, IPodSpec | undefined] => [
        svc,
        named<IDeployment>(objects, "Deployment", `switchyard-${svc}`).spec?.template.spec,
      ]),
      ["admin", named<IJob>(objects, "Job", "switchyard-setup").spec?.template.spec],
    ];
    for (const [role, spec] of pods) {
      expect(envOf(spec, "NATS_USER")).toBe(role);
      expect(envOf(spec, "SWITCHYARD_ROLE")).toBe(role);
      const credential = spec?.volumes?.find((v) => v.name === "nats-credential")?.secret;
      expect(credential?.secretName).toBe("switchyard-nats-users");
      expect(credential?.items).toEqual([{ key: passwordVariable(role), path: "password" }]);
      const mounts = spec?.containers[0]?.volumeMounts ?? [];
      expect(mounts.find((m) => m.name === "nats-credential")?.mountPath).toBe(
        "/etc/switchyard-nats",
      );
      // No Switchyard pod sees the other roles' passwords as environment variables.
      const fromEnv = spec?.containers[0]?.envFrom?.map((e) => e.secretRef?.name) ?? [];
      expect(fromEnv).not.toContain("switchyard-nats-users");
    }
    const job = named<IJob>(objects, "Job", "switchyard-setup");
    expect(job.spec?.template.spec?.containers[0]?.args).toEqual(["setup"]);
    // Gone 10 minutes after it succeeds, so the next apply runs it again.
    expect(job.spec?.ttlSecondsAfterFinished).toBeGreaterThan(0);
    const nats = named<IStatefulSet>(objects, "StatefulSet", "nats").spec?.template.spec;
    expect(nats?.containers[0]?.envFrom?.map((e) => e.secretRef?.name)).toEqual([
      "switchyard-nats-users",
    ]);
  });
});

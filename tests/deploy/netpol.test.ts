import { describe, expect, test } from "bun:test";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { canConnect, cidrContains, type Peer } from "./netpol.ts";

// Self-test of the NetworkPolicy evaluator that policy.test.ts relies on.

const pod = (labels: Record<string, string>, namespace = "a"): Peer => ({
  kind: "pod",
  namespace,
  namespaceLabels: { "kubernetes.io/metadata.name": namespace },
  labels,
});
const web = pod({ app: "web" });
const db = pod({ app: "db" });
const outsider = pod({ app: "web" }, "b");
const ip: Peer = { kind: "ip", ip: "198.51.100.7" };
const policy = (spec: INetworkPolicy["spec"]): INetworkPolicy => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "NetworkPolicy",
  metadata: { name: "p", namespace: "a" },
  spec,
});
const denyAll = policy({ podSelector: {}, policyTypes: ["Ingress", "Egress"] });

describe("NetworkPolicy evaluator", () => {
  test("no policy allows everything; a default deny blocks everything", () => {
    expect(canConnect([], web, db, { port: 1 })).toBe(true);
    expect(canConnect([denyAll], web, db, { port: 1 })).toBe(false);
    expect(canConnect([denyAll], ip, web, { port: 1 })).toBe(false);
  });

  test("a connection needs both the sender's egress and the receiver's ingress", () => {
    const ingressToDb = policy({
      podSelector: { matchLabels: { app: "db" } },
      policyTypes: ["Ingress"],
      ingress: [
        { from: [{ podSelector: { matchLabels: { app: "web" } } }], ports: [{ port: 5432 }] },
      ],
    });
    const egressFromWeb = policy({
      podSelector: { matchLabels: { app: "web" } },
      policyTypes: ["Egress"],
      egress: [{ to: [{ podSelector: { matchLabels: { app: "db" } } }], ports: [{ port: 5432 }] }],
    });
    expect(canConnect([denyAll, ingressToDb], web, db, { port: 5432 })).toBe(false);
    expect(canConnect([denyAll, ingressToDb, egressFromWeb], web, db, { port: 5432 })).toBe(true);
    expect(canConnect([denyAll, ingressToDb, egressFromWeb], web, db, { port: 5433 })).toBe(false);
    expect(
      canConnect([denyAll, ingressToDb, egressFromWeb], web, db, { port: 5432, protocol: "UDP" }),
    ).toBe(false);
    // A bare podSelector means "this namespace" only.
    expect(canConnect([ingressToDb], outsider, db, { port: 5432 })).toBe(false);
  });

  test("namespaceSelector with podSelector, and ipBlock with except", () => {
    const fromB = policy({
      podSelector: {},
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "b" } },
              podSelector: { matchLabels: { app: "web" } },
            },
          ],
        },
      ],
    });
    expect(canConnect([fromB], outsider, db, { port: 1 })).toBe(true);
    expect(canConnect([fromB], web, db, { port: 1 })).toBe(false);
    const out = policy({
      podSelector: {},
      policyTypes: ["Egress"],
      egress: [{ to: [{ ipBlock: { cidr: "0.0.0.0/0", except: ["198.51.100.0/24"] } }] }],
    });
    expect(canConnect([out], web, ip, { port: 443 })).toBe(false);
    expect(canConnect([out], web, { kind: "ip", ip: "203.0.113.1" }, { port: 443 })).toBe(true);
    expect(canConnect([out], web, db, { port: 443 })).toBe(false);
  });

  test("CIDR containment", () => {
    expect(cidrContains("10.0.0.0/8", "10.200.3.4")).toBe(true);
    expect(cidrContains("10.0.0.0/8", "11.0.0.1")).toBe(false);
    expect(cidrContains("169.254.169.254/32", "169.254.169.254")).toBe(true);
    expect(cidrContains("169.254.169.254/32", "169.254.169.253")).toBe(false);
    expect(cidrContains("0.0.0.0/0", "1.2.3.4")).toBe(true);
    expect(cidrContains("::/0", "1.2.3.4")).toBe(false);
  });
});

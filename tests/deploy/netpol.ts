import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { selects } from "./k8s.ts";

/**
 * A small NetworkPolicy evaluator (the Kubernetes semantics, for the features the manifests use):
 * a pod is isolated in a direction when some policy selecting it lists that direction; then a
 * connection is allowed only when some such policy has a rule whose peers and ports match.
 * Peers: podSelector (same namespace), namespaceSelector (+ podSelector), ipBlock (addresses
 * outside the cluster's pods). Ports: numeric, with protocol (TCP unless told).
 */

export type Peer =
  | {
      readonly kind: "pod";
      readonly namespace: string;
      readonly namespaceLabels: Record<string, string>;
      readonly labels: Record<string, string>;
    }
  | { readonly kind: "ip"; readonly ip: string };

export interface Connection {
  readonly protocol?: "TCP" | "UDP";
  readonly port: number;
}

type Rule = {
  peers: NonNullable<NonNullable<INetworkPolicy["spec"]>["ingress"]>[number]["from"];
  ports: NonNullable<NonNullable<INetworkPolicy["spec"]>["ingress"]>[number]["ports"];
};

function ipv4ToInt(ip: string): number | undefined {
  const parts = ip.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const v = Number(part);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

/** IPv4 CIDR containment; an IPv6 CIDR never contains an IPv4 address and vice versa. */
export function cidrContains(cidr: string, ip: string): boolean {
  const [base, bitsText] = cidr.split("/");
  const bits = Number(bitsText);
  const ipN = ipv4ToInt(ip);
  const baseN = base === undefined ? undefined : ipv4ToInt(base);
  if (ipN === undefined || baseN === undefined) {
    if (ip.includes(":") && cidr.includes(":")) {
      if (bits === 0) return true;
      throw new Error(`IPv6 CIDR ${cidr} other than ::/0 is not modelled`);
    }
    return false;
  }
  if (!Number.isInteger(bits) || bits < 0 || bits > 32) throw new Error(`bad CIDR ${cidr}`);
  const size = 2 ** (32 - bits);
  return Math.floor(ipN / size) === Math.floor(baseN / size);
}

function peerMatches(rule: Rule, peer: Peer, policyNamespace: string): boolean {
  if (!rule.peers || rule.peers.length === 0) return true;
  return rule.peers.some((p) => {
    if (p.ipBlock) {
      if (peer.kind !== "ip") return false;
      return (
        cidrContains(p.ipBlock.cidr, peer.ip) &&
        !(p.ipBlock.except ?? []).some((cidr) => cidrContains(cidr, peer.ip))
      );
    }
    if (peer.kind !== "pod") return false;
    if (p.namespaceSelector) {
      if (!selects(p.namespaceSelector, peer.namespaceLabels)) return false;
    } else if (peer.namespace !== policyNamespace) {
      return false;
    }
    return p.podSelector ? selects(p.podSelector, peer.labels) : true;
  });
}

function portMatches(rule: Rule, conn: Connection): boolean {
  if (!rule.ports || rule.ports.length === 0) return true;
  return rule.ports.some((p) => {
    if (typeof p.port !== "number" && p.port !== undefined) {
      throw new Error(`named port ${p.port} in a NetworkPolicy is not modelled`);
    }
    const protocolOk = (p.protocol ?? "TCP") === (conn.protocol ?? "TCP");
    if (!protocolOk) return false;
    if (p.port === undefined) return true;
    const end = p.endPort ?? p.port;
    return conn.port >= p.port && conn.port <= end;
  });
}

export interface Subject {
  readonly namespace: string;
  readonly labels: Record<string, string>;
}

function allowed(
  policies: readonly INetworkPolicy[],
  subject: Subject,
  direction: "Ingress" | "Egress",
  peer: Peer,
  conn: Connection,
): boolean {
  const selecting = policies.filter(
    (p) =>
      (p.metadata?.namespace ?? subject.namespace) === subject.namespace &&
      selects(p.spec?.podSelector, subject.labels) &&
      (p.spec?.policyTypes ?? ["Ingress"]).includes(direction),
  );
  if (selecting.length === 0) return true;
  return selecting.some((p) => {
    const ns = p.metadata?.namespace ?? subject.namespace;
    const rules: Rule[] =
      direction === "Ingress"
        ? (p.spec?.ingress ?? []).map((r) => ({ peers: r.from, ports: r.ports }))
        : (p.spec?.egress ?? []).map((r) => ({ peers: r.to, ports: r.ports }));
    return rules.some((r) => peerMatches(r, peer, ns) && portMatches(r, conn));
  });
}

/** May `from` open `conn` to `to`? Both sides' policies must allow it (egress and ingress). */
export function canConnect(
  policies: readonly INetworkPolicy[],
  from: Peer,
  to: Peer,
  conn: Connection,
): boolean {
  const egressOk =
    from.kind === "ip" ||
    allowed(policies, { namespace: from.namespace, labels: from.labels }, "Egress", to, conn);
  const ingressOk =
    to.kind === "ip" ||
    allowed(policies, { namespace: to.namespace, labels: to.labels }, "Ingress", from, conn);
  return egressOk && ingressOk;
}

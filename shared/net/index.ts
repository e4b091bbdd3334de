export {
  createEgressChecker,
  type EgressChecker,
  type EgressCheckerOptions,
  type HostVerdict,
} from "./checker.ts";
export { type CidrBlock, CidrParseError, cidrContains, parseCidr, parseCidrList } from "./cidr.ts";
export {
  ADDRESS_RULE_WORDING,
  type AddressRule,
  classifyAddress,
  classifyParsed,
  effectiveAddress,
} from "./classify.ts";
export {
  classifyNetworkError,
  type DeliverOptions,
  type DeliveryAttempt,
  type DeliveryErrorClass,
  deliverWebhook,
} from "./deliver.ts";
export { type IpAddress, parseIp, parseIpv4, parseIpv6 } from "./ip.ts";
export {
  addressRefusal,
  type CallbackUrlCheck,
  checkAddress,
  checkCallbackUrl,
  checkHostname,
  type EgressPolicy,
  type EgressRefusal,
  type UrlRule,
} from "./policy.ts";
export {
  type ConnectionPool,
  type ConnectionPoolOptions,
  createConnectionPool,
  type Destination,
} from "./pool.ts";
export {
  type ResolveCheck,
  type ResolvedAddress,
  type ResolveOptions,
  type Resolver,
  resolveAndCheck,
  systemResolver,
} from "./resolve.ts";
export { parseRetryAfter } from "./retry-after.ts";
export { FETCH_REQUESTS_AT_ONCE } from "./send-plain.ts";

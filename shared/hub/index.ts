export {
  type ConnectOptions,
  type ConnectWait,
  connectHub,
  type HubConnection,
  HubNotFoundError,
  NatsUnreachableError,
} from "./connection.ts";
export {
  asTopologyNotSetUp,
  NatsAuthRefusedError,
  NatsFileError,
  NatsTlsError,
  TopologyNotSetUpError,
} from "./refusals.ts";

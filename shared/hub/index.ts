export {
  asTopologyNotSetUp,
  type ConnectOptions,
  type ConnectWait,
  connectHub,
  type HubConnection,
  HubNotFoundError,
  NatsAuthRefusedError,
  NatsTlsError,
  NatsUnreachableError,
  TopologyNotSetUpError,
} from "./connection.ts";

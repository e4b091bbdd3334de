export {
  asTopologyNotSetUp,
  type ConnectOptions,
  type ConnectWait,
  connectHub,
  type HubConnection,
  HubNotFoundError,
  NatsAuthRefusedError,
  NatsFileError,
  NatsTlsError,
  NatsUnreachableError,
  TopologyNotSetUpError,
} from "./connection.ts";

export {
  type ConnectOptions,
  type ConnectWait,
  connectHub,
  type HubConnection,
  HubNotFoundError,
  NatsAuthRefusedError,
  NatsTlsError,
  NatsUnreachableError,
} from "./connection.ts";

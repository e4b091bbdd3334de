export {
  type ConnectOptions,
  type ConnectWait,
  connectHub,
  type HubConnection,
  HubNotFoundError,
  NatsUnreachableError,
} from "./connection.ts";

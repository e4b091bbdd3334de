export { connectHub, type HubConnection } from "./connection.ts";
